import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { simpleCounter } from "../../../test/support/simple-counter.js";
import {
  createContextEngine,
  createMemoryStores,
  createPlan,
  emptyPlan,
  type MessageInput,
  renderPrompt,
  ThreadLog,
  ValidationError,
} from "../../index.js";
import { fromModelMessages } from "./from-model-messages.js";
import { toLanguageModelPrompt, toModelMessages } from "./to-model-messages.js";

const counter = simpleCounter();

/** from → append → prepareTurn (roomy budget: nothing compacted) → to. */
async function throughEngine(messages: ModelMessage[]): Promise<ModelMessage[]> {
  const engine = createContextEngine({
    stores: createMemoryStores(),
    counter,
    budget: { contextWindow: 1_000_000 },
  });
  await engine.append("t", fromModelMessages(messages));
  const turn = await engine.prepareTurn("t", { format: "openai" });
  expect(turn.stats.compacted).toBe(false);
  return toModelMessages(turn.prompt);
}

const user = (text: string): ModelMessage => ({ role: "user", content: text });
const call = (id: string, input: unknown = { q: id }): ModelMessage => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: id, toolName: "search", input }],
});

/** Each case: SDK messages, and the log parts of the message under test (the last one). */
const cases: ReadonlyArray<{
  readonly name: string;
  readonly messages: ModelMessage[];
  readonly parts: MessageInput["parts"];
}> = [
  {
    name: "a system prompt with provider options",
    messages: [
      {
        role: "system",
        content: "be brief",
        providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
      },
    ],
    parts: [{ type: "text", text: "be brief" }],
  },
  { name: "user text as a string", messages: [user("hello")], parts: [{ type: "text", text: "hello" }] },
  {
    name: "user text parts with provider options",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b", providerOptions: { openai: { detail: "x" } } },
        ],
      },
    ],
    parts: [
      { type: "text", text: "a" },
      { type: "text", text: "b" },
    ],
  },
  {
    name: "an image as bytes, as base64 without a media type, as a URL and as a URL string",
    messages: [
      {
        role: "user",
        content: [
          { type: "image", image: new Uint8Array([137, 80, 78, 71]), mediaType: "image/png" },
          { type: "image", image: "iVBORw0KGgo=" },
          { type: "image", image: new URL("https://example.test/cat.png"), mediaType: "image/png" },
          {
            type: "image",
            image: "https://example.test/dog.jpg",
            providerOptions: { openai: { imageDetail: "low" } },
          },
        ],
      },
    ],
    parts: [
      { type: "media", mediaType: "image/png", uri: "data:image/png;base64,iVBORw==", sizeBytes: 4 },
      { type: "media", mediaType: "image/*", uri: "data:image/*;base64,iVBORw0KGgo=", sizeBytes: 8 },
      { type: "media", mediaType: "image/png", uri: "https://example.test/cat.png" },
      { type: "media", mediaType: "image/*", uri: "https://example.test/dog.jpg" },
    ],
  },
  {
    name: "files: bytes with a name, a URL, base64",
    messages: [
      {
        role: "user",
        content: [
          {
            type: "file",
            data: new Uint8Array([37, 80, 68, 70]),
            mediaType: "application/pdf",
            filename: "a.pdf",
          },
          { type: "file", data: new URL("s3://bucket/key.csv"), mediaType: "text/csv" },
          { type: "file", data: "aGVsbG8=", mediaType: "text/plain" },
        ],
      },
    ],
    parts: [
      {
        type: "media",
        mediaType: "application/pdf",
        uri: "data:application/pdf;base64,JVBERg==",
        sizeBytes: 4,
      },
      { type: "media", mediaType: "text/csv", uri: "s3://bucket/key.csv" },
      { type: "media", mediaType: "text/plain", uri: "data:text/plain;base64,aGVsbG8=", sizeBytes: 5 },
    ],
  },
  {
    name: "assistant text as a string",
    messages: [user("hi"), { role: "assistant", content: "hello" }],
    parts: [{ type: "text", text: "hello" }],
  },
  {
    name: "reasoning: an Anthropic signature, redacted thinking, an OpenAI encrypted item, plain",
    messages: [
      user("think"),
      {
        role: "assistant",
        content: [
          {
            type: "reasoning",
            text: "first",
            providerOptions: { anthropic: { signature: "EqQBCkgIARAB+/==" } },
          },
          {
            type: "reasoning",
            text: "",
            providerOptions: { anthropic: { redactedData: "opaque+payload==" } },
          },
          {
            type: "reasoning",
            text: "summary",
            providerOptions: { openai: { itemId: "rs_1", reasoningEncryptedContent: "gAAAAB…" } },
          },
          { type: "reasoning", text: "plain" },
          { type: "text", text: "answer" },
        ],
      },
    ],
    parts: [
      { type: "reasoning", text: "first", signature: "EqQBCkgIARAB+/==" },
      { type: "reasoning", text: "", redacted: "opaque+payload==" },
      { type: "reasoning", text: "summary", signature: "rs_1", redacted: "gAAAAB…" },
      { type: "reasoning", text: "plain" },
      { type: "text", text: "answer" },
    ],
  },
  {
    name: "tool calls: object, string and missing input, provider options",
    messages: [
      user("go"),
      {
        role: "assistant",
        content: [
          { type: "text", text: "calling" },
          { type: "tool-call", toolCallId: "c1", toolName: "search", input: { q: "x", n: [1, 2] } },
          { type: "tool-call", toolCallId: "c2", toolName: "raw", input: "not json {" },
          {
            type: "tool-call",
            toolCallId: "c3",
            toolName: "ping",
            input: undefined,
            providerOptions: { google: { thoughtSignature: "ts" } },
          },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "search", output: { type: "text", value: "1" } },
          { type: "tool-result", toolCallId: "c2", toolName: "raw", output: { type: "text", value: "2" } },
          { type: "tool-result", toolCallId: "c3", toolName: "ping", output: { type: "text", value: "3" } },
        ],
      },
    ],
    parts: [
      { type: "tool_result", callId: "c1", content: "1" },
      { type: "tool_result", callId: "c2", content: "2" },
      { type: "tool_result", callId: "c3", content: "3" },
    ],
  },
  {
    name: "every tool output kind",
    messages: [
      user("go"),
      {
        role: "assistant",
        content: ["a", "b", "c", "d", "e", "f", "g"].map((id) => ({
          type: "tool-call" as const,
          toolCallId: id,
          toolName: "t",
          input: {},
        })),
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "a", toolName: "t", output: { type: "text", value: "plain" } },
          {
            type: "tool-result",
            toolCallId: "b",
            toolName: "t",
            output: { type: "json", value: { ok: true, list: [1, null, "x"] } },
          },
          {
            type: "tool-result",
            toolCallId: "c",
            toolName: "t",
            output: { type: "error-text", value: "boom" },
          },
          {
            type: "tool-result",
            toolCallId: "d",
            toolName: "t",
            output: { type: "error-json", value: { code: 7 } },
          },
          {
            type: "tool-result",
            toolCallId: "e",
            toolName: "t",
            output: { type: "execution-denied", reason: "the user said no" },
          },
          { type: "tool-result", toolCallId: "f", toolName: "t", output: { type: "execution-denied" } },
          {
            type: "tool-result",
            toolCallId: "g",
            toolName: "t",
            output: {
              type: "content",
              value: [
                { type: "text", text: "a chart:" },
                { type: "image-data", data: "iVBORw0KGgo=", mediaType: "image/png" },
                { type: "file-url", url: "https://example.test/r.pdf" },
              ],
            },
            providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
          },
        ],
      },
    ],
    parts: [
      { type: "tool_result", callId: "a", content: "plain" },
      { type: "tool_result", callId: "b", content: '{"ok":true,"list":[1,null,"x"]}' },
      { type: "tool_result", callId: "c", content: "boom", isError: true },
      { type: "tool_result", callId: "d", content: '{"code":7}', isError: true },
      { type: "tool_result", callId: "e", content: "the user said no", isError: true },
      { type: "tool_result", callId: "f", content: "Tool execution denied.", isError: true },
      {
        type: "tool_result",
        callId: "g",
        content: "a chart:\n[image-data image/png]\n[file-url https://example.test/r.pdf]",
      },
    ],
  },
  {
    name: "assistant parts the log holds as text: a file, a provider-executed tool call and result",
    messages: [
      user("search"),
      {
        role: "assistant",
        content: [
          { type: "file", data: new Uint8Array([1, 2]), mediaType: "image/png" },
          {
            type: "tool-call",
            toolCallId: "ws1",
            toolName: "web_search",
            input: { query: "x" },
            providerExecuted: true,
          },
          {
            type: "tool-result",
            toolCallId: "ws1",
            toolName: "web_search",
            output: { type: "json", value: [{ url: "https://a.test" }] },
            providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
          },
          { type: "text", text: "found it" },
        ],
      },
    ],
    parts: [
      { type: "text", text: "[file image/png]" },
      { type: "text", text: '[web_search call ws1] {"query":"x"}' },
      { type: "text", text: '[web_search result ws1] [{"url":"https://a.test"}]' },
      { type: "text", text: "found it" },
    ],
  },
];

describe("fromModelMessages / toModelMessages", () => {
  for (const c of cases) {
    it(`${c.name}: the log parts hold what the model reads, and the round trip gives the messages back`, async () => {
      const inputs = fromModelMessages(c.messages);
      expect(inputs.at(-1)!.parts).toEqual(c.parts);
      const back = await throughEngine(c.messages);
      expect(back).toEqual(c.messages);
    });
  }

  it("keeps the bytes and the form of media data", async () => {
    const bytes = new Uint8Array([0, 255, 10, 13]);
    const [message] = await throughEngine([{ role: "user", content: [{ type: "image", image: bytes }] }]);
    const image = (message!.content as Array<{ image: unknown }>)[0]!.image;
    expect(image).toBeInstanceOf(Uint8Array);
    expect([...(image as Uint8Array)]).toEqual([0, 255, 10, 13]);
    const [url] = await throughEngine([
      {
        role: "user",
        content: [{ type: "file", data: new URL("https://x.test/a"), mediaType: "text/plain" }],
      },
    ]);
    expect((url!.content as Array<{ data: unknown }>)[0]!.data).toBeInstanceOf(URL);
  });

  it("a tool result's name comes from its call; tool messages record it for retention policies", () => {
    const inputs = fromModelMessages([
      user("go"),
      call("c1"),
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "search", output: { type: "text", value: "r" } },
        ],
      },
    ]);
    expect(inputs[2]!.meta?.toolName).toBe("search");
  });

  it("leaves out tool approvals, which the model never sees, and a tool message made only of them", async () => {
    const messages: ModelMessage[] = [
      user("delete it"),
      {
        role: "assistant",
        content: [
          { type: "tool-call", toolCallId: "c1", toolName: "rm", input: { path: "/tmp/x" } },
          { type: "tool-approval-request", approvalId: "ap1", toolCallId: "c1" },
        ],
      },
      { role: "tool", content: [{ type: "tool-approval-response", approvalId: "ap1", approved: true }] },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "rm", output: { type: "text", value: "gone" } },
        ],
      },
    ];
    const inputs = fromModelMessages(messages);
    expect(inputs.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(inputs[1]!.parts).toEqual([
      { type: "tool_call", callId: "c1", name: "rm", args: '{"path":"/tmp/x"}' },
    ]);
    const back = await throughEngine(messages);
    expect(back).toEqual([
      messages[0],
      { role: "assistant", content: [(messages[1]!.content as unknown[])[0]] },
      messages[3],
    ]);
  });

  it("notes only what the parts cannot say: plain text, calls and text results carry no metadata", () => {
    const inputs = fromModelMessages([
      { role: "user", content: [{ type: "text", text: "q" }] },
      call("c1"),
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "search", output: { type: "text", value: "r" } },
        ],
      },
    ]);
    expect(inputs[0]!.meta).toBeUndefined();
    expect(inputs[1]!.meta).toBeUndefined();
    expect(inputs[2]!.meta).toEqual({ toolName: "search" });
  });
});

describe("toModelMessages on what compaction wrote", () => {
  const messages: ModelMessage[] = [
    { role: "system", content: "sys" },
    user("task"),
    call("c1"),
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "c1",
          toolName: "search",
          output: { type: "json", value: { big: "x".repeat(300) } },
        },
      ],
    },
    call("c2", { q: "pending" }),
  ];
  const inputs = fromModelMessages(messages).map((m, i) => ({ ...m, id: `m${i}` }));
  const log = ThreadLog.from("t", inputs);

  it("a cleared result becomes a text output under the same tool name; a pending call gets a stub result", () => {
    const plan = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: log.length,
      actions: [{ kind: "clear", span: ["m3"], record: { kind: "clear" }, strategy: "test", reason: "old" }],
    });
    const out = toModelMessages(renderPrompt(log, plan, { counter }));
    expect(out.slice(0, 3)).toEqual(messages.slice(0, 3));
    expect(out[3]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "c1",
          toolName: "search",
          output: { type: "text", value: expect.stringContaining("[result cleared: search") },
        },
      ],
    });
    expect(out[4]).toEqual(messages[4]);
    expect(out[5]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "c2",
          toolName: "search",
          output: { type: "text", value: expect.stringContaining("[result pending: search") },
        },
      ],
    });
  });

  it("a summary becomes one assistant text message", () => {
    const plan = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: log.length,
      actions: [
        {
          kind: "summarize",
          span: ["m2", "m3"],
          record: { kind: "summarize", summary: "searched for c1", summarizerId: "x", promptVersion: "1" },
          strategy: "test",
          reason: "old",
        },
      ],
    });
    const out = toModelMessages(renderPrompt(log, plan, { counter }));
    expect(out[2]).toEqual({
      role: "assistant",
      content: [{ type: "text", text: expect.stringContaining("searched for c1") }],
    });
    expect(out.filter((m) => m.role === "tool")).toHaveLength(1); // only the pending call's stub
  });

  it("messages that did not come from the SDK convert by their parts", () => {
    const plain = ThreadLog.from("p", [
      {
        role: "user",
        parts: [
          { type: "text", text: "see" },
          { type: "media", mediaType: "image/png", uri: "https://x.test/i.png" },
        ],
      },
      { role: "user", parts: [{ type: "media", mediaType: "application/pdf", uri: "not a url" }] },
      {
        role: "assistant",
        parts: [
          { type: "reasoning", text: "r", signature: "s" },
          { type: "text", text: "ok" },
        ],
      },
    ]);
    expect(toModelMessages(renderPrompt(plain, emptyPlan("p"), { counter }))).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "see" },
          { type: "image", image: new URL("https://x.test/i.png"), mediaType: "image/png" },
        ],
      },
      { role: "user", content: [{ type: "text", text: "[media application/pdf: not a url]" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "r" },
          { type: "text", text: "ok" },
        ],
      },
    ]);
  });

  it("the provider-level prompt has content lists and images as files", () => {
    const prompt = renderPrompt(
      ThreadLog.from(
        "v",
        fromModelMessages([
          { role: "user", content: [{ type: "image", image: "iVBORw0KGgo=" }] },
          { role: "assistant", content: "ok" },
        ]),
      ),
      emptyPlan("v"),
      { counter },
    );
    expect(toLanguageModelPrompt(prompt)).toEqual([
      { role: "user", content: [{ type: "file", data: "iVBORw0KGgo=", mediaType: "image/*" }] },
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
    ]);
  });
});

describe("bad input", () => {
  const bad: ReadonlyArray<[string, unknown[], number, string]> = [
    ["not an object", [user("a"), 42], 1, "(message)"],
    ["an unknown role", [{ role: "robot", content: "x" }], 0, "role"],
    ["content of the wrong type", [{ role: "user", content: 5 }], 0, "content"],
    [
      "a part the role cannot hold",
      [
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "reasoning", text: "b" },
          ],
        },
      ],
      0,
      "content[1].type",
    ],
    [
      "an empty tool call id",
      [
        user("a"),
        { role: "assistant", content: [{ type: "tool-call", toolCallId: "", toolName: "t", input: {} }] },
      ],
      1,
      "content[0].toolCallId",
    ],
    [
      "an unknown output kind",
      [
        {
          role: "tool",
          content: [
            { type: "tool-result", toolCallId: "c", toolName: "t", output: { type: "xml", value: "" } },
          ],
        },
      ],
      0,
      "content[0].output.type",
    ],
    [
      "a file without a media type",
      [{ role: "user", content: [{ type: "file", data: "AA==" }] }],
      0,
      "content[0].mediaType",
    ],
    [
      "image data of the wrong type",
      [{ role: "user", content: [{ type: "image", image: 7 }] }],
      0,
      "content[0].image",
    ],
    [
      "provider options that JSON cannot hold",
      [{ role: "user", content: [{ type: "text", text: "a", providerOptions: { x: { n: Number.NaN } } }] }],
      0,
      "content[0].providerOptions.x.n",
    ],
    [
      "a json output that is not JSON",
      [
        user("a"),
        call("c"),
        {
          role: "tool",
          content: [
            { type: "tool-result", toolCallId: "c", toolName: "t", output: { type: "json", value: () => 1 } },
          ],
        },
      ],
      2,
      "content[0].output.value",
    ],
  ];
  for (const [name, messages, index, field] of bad) {
    it(`${name}: a ValidationError naming message ${index} and ${field}`, () => {
      let error: unknown;
      try {
        fromModelMessages(messages as ModelMessage[]);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).where).toEqual({ index, field });
      expect((error as Error).message).toContain(`index ${index}`);
    });
  }

  it("not an array, and a prompt without messages", () => {
    expect(() => fromModelMessages("hi" as never)).toThrow(ValidationError);
    expect(() => toModelMessages({} as never)).toThrow(ValidationError);
  });
});
