import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { simpleCounter } from "../../../test/support/simple-counter.js";
import { createContextEngine, createMemoryStores, ValidationError } from "../../index.js";
import { ConversationSync, conversationOf } from "./conversation-sync.js";

const newEngine = () =>
  createContextEngine({
    stores: createMemoryStores(),
    counter: simpleCounter(),
    budget: { contextWindow: 1_000_000 },
  });

const user = (text: string): ModelMessage => ({ role: "user", content: text });
const reply = (text: string): ModelMessage => ({ role: "assistant", content: text });
const call = (id: string): ModelMessage => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: id, toolName: "search", input: { q: id } }],
});
const result = (id: string): ModelMessage => ({
  role: "tool",
  content: [
    { type: "tool-result", toolCallId: id, toolName: "search", output: { type: "text", value: `r${id}` } },
  ],
});

async function logOf(engine: ReturnType<typeof newEngine>, threadId = "t") {
  const rows = (await engine.explain(threadId)).rows;
  return { ids: rows.map((r) => r.id), previews: rows.map((r) => r.preview) };
}

describe("ConversationSync", () => {
  it("appends what each step adds, once, however often a step is seen", async () => {
    const engine = newEngine();
    const sync = new ConversationSync(engine, "t");
    const steps = [[user("task")], [user("task"), call("c1"), result("c1")]];
    expect(await sync.sync(conversationOf(undefined, steps[0]!))).toEqual({ appended: 1 });
    expect(await sync.sync(conversationOf(undefined, steps[1]!))).toEqual({ appended: 2 });
    expect(await sync.sync(conversationOf(undefined, steps[1]!))).toEqual({ appended: 0 });
    expect((await logOf(engine)).previews).toEqual(["task", 'search({"q":"c1"})', "rc1"]);
  });

  it("a new run that resends the history appends only what is new, the last reply of the earlier run included", async () => {
    const engine = newEngine();
    const first = [user("task"), call("c1"), result("c1")];
    await new ConversationSync(engine, "t").sync(conversationOf("sys", first));
    const before = await logOf(engine);
    const second = [...first, reply("done"), user("and now?")];
    const again = new ConversationSync(engine, "t");
    expect(await again.sync(conversationOf("sys", second))).toEqual({ appended: 2 });
    const after = await logOf(engine);
    expect(after.ids.slice(0, before.ids.length)).toEqual(before.ids);
    expect(after.previews).toEqual(["sys", "task", 'search({"q":"c1"})', "rc1", "done", "and now?"]);
    // Resent once more, whole: nothing new.
    expect(await new ConversationSync(engine, "t").sync(conversationOf("sys", second))).toEqual({
      appended: 0,
    });
  });

  it("a new run that sends only its new messages appends them after the log, even when they repeat earlier text", async () => {
    const engine = newEngine();
    const sync = new ConversationSync(engine, "t");
    await sync.sync(conversationOf("sys", [user("start"), reply("ok")]));
    for (const run of [1, 2]) {
      const fresh = new ConversationSync(engine, "t");
      expect(await fresh.sync(conversationOf("sys", [user("continue")])), `run ${run}`).toEqual({
        appended: 1,
      });
      expect(await fresh.sync(conversationOf("sys", [user("continue"), reply(`step ${run}`)]))).toEqual({
        appended: 1,
      });
    }
    // The same helper reused for the next run (an agent's generate called again) does the same.
    expect(await sync.sync(conversationOf("sys", [user("continue")]))).toEqual({ appended: 1 });
    expect((await logOf(engine)).previews).toEqual([
      "sys",
      "start",
      "ok",
      "continue",
      "step 1",
      "continue",
      "step 2",
      "continue",
    ]);
  });

  it("refuses a conversation that rewrote history the log holds, naming the message, and appends nothing", async () => {
    const engine = newEngine();
    await new ConversationSync(engine, "t").sync(
      conversationOf(undefined, [user("a"), reply("b"), user("c")]),
    );
    const edited = [user("a"), reply("B!"), user("c")];
    const error = await new ConversationSync(engine, "t")
      .sync(conversationOf(undefined, edited))
      .catch((e) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.where).toEqual({ threadId: "t", index: 1, field: "messages" });
    expect(error.message).toContain("needs a new thread");
    expect((await logOf(engine)).ids).toHaveLength(3);
  });

  it("approval-only messages take no log message and do not break the chain", async () => {
    const engine = newEngine();
    const sync = new ConversationSync(engine, "t");
    const conversation: ModelMessage[] = [
      user("rm it"),
      {
        role: "assistant",
        content: [
          { type: "tool-call", toolCallId: "c1", toolName: "rm", input: {} },
          { type: "tool-approval-request", approvalId: "a1", toolCallId: "c1" },
        ],
      },
      { role: "tool", content: [{ type: "tool-approval-response", approvalId: "a1", approved: true }] },
    ];
    expect(await sync.sync(conversationOf(undefined, conversation))).toEqual({ appended: 2 });
    const next = [
      ...conversation,
      {
        role: "tool" as const,
        content: [
          {
            type: "tool-result" as const,
            toolCallId: "c1",
            toolName: "rm",
            output: { type: "text" as const, value: "ok" },
          },
        ],
      },
    ];
    expect(await new ConversationSync(engine, "t").sync(conversationOf(undefined, next))).toEqual({
      appended: 1,
    });
    expect((await logOf(engine)).ids).toHaveLength(3);
  });

  it("a failed append leaves nothing behind, and the next sync appends the batch whole", async () => {
    const engine = newEngine();
    const sync = new ConversationSync(engine, "t");
    const orphan = [user("x"), result("nope")];
    await expect(sync.sync(conversationOf(undefined, orphan))).rejects.toThrow(ValidationError);
    await expect(engine.explain("t")).rejects.toThrow("append");
    expect(await sync.sync(conversationOf(undefined, [user("x"), call("c"), result("c")]))).toEqual({
      appended: 3,
    });
  });

  it("runs one sync at a time", async () => {
    const engine = newEngine();
    const sync = new ConversationSync(engine, "t");
    const order: string[] = [];
    await Promise.all([
      sync.serialized(async () => {
        await new Promise((r) => setTimeout(r, 20));
        order.push("first");
      }),
      sync.serialized(async () => {
        order.push("second");
      }),
    ]);
    expect(order).toEqual(["first", "second"]);
  });

  it("two syncs of one engine and thread take turns: a conversation seen by both is appended once", async () => {
    const engine = newEngine();
    const a = new ConversationSync(engine, "t");
    const b = new ConversationSync(engine, "t");
    const conversation = [user("task"), call("c1"), result("c1")];
    const results = await Promise.all([
      a.serialized(() => a.sync(conversationOf("sys", conversation))),
      b.serialized(() => b.sync(conversationOf("sys", conversation))),
    ]);
    expect(results.map((r) => r.appended)).toEqual([4, 0]);
    expect((await logOf(engine)).previews).toEqual(["sys", "task", 'search({"q":"c1"})', "rc1"]);
  });

  it("a conversation that goes on from the last one is converted only where it is new", async () => {
    const engine = newEngine();
    const sync = new ConversationSync(engine, "t");
    const copy = () => [user("task"), call("c1"), result("c1"), reply("r1")].map((m) => structuredClone(m));
    await sync.sync(conversationOf(undefined, copy()));
    // Fresh objects each call (as the SDK hands a middleware); reading a middle one would throw.
    const poisoned = copy();
    poisoned[1] = new Proxy(poisoned[1]!, {
      get: () => {
        throw new Error("the middle of the synced history was read again");
      },
    });
    expect(await sync.sync(conversationOf(undefined, [...poisoned, user("next")]))).toEqual({ appended: 1 });
    expect((await logOf(engine)).previews.at(-1)).toBe("next");
  });
});
