import { expect, it } from "vitest";
import { ValidationError } from "../../src/errors/ledger-error.js";
import { hashMessageContent } from "../../src/log/canonical-json.js";
import type { Message, Part } from "../../src/log/message.js";
import { MAX_ID_LENGTH } from "../../src/log/message-schema.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import { createPlan } from "../../src/plan/compaction-plan.js";
import type { StoredMessage } from "../../src/stores/log-store.js";
import type { ModelCallRecord } from "../../src/stores/model-call-store.js";
import type { StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { COUNTER, stored } from "./store-fixtures.js";

const NUL = "t\u0000x";
const LONG = "t".repeat(MAX_ID_LENGTH + 1);
const LONGEST = "t".repeat(MAX_ID_LENGTH);

function callMessage(callId: string): StoredMessage {
  const parts: ReadonlyArray<Part> = [{ type: "tool_call", callId, name: "grep", args: "{}" }];
  const message: Message = {
    id: "a0",
    seq: 0,
    role: "assistant",
    parts,
    meta: {},
    hash: hashMessageContent("assistant", parts),
  };
  return { message, tokens: { [COUNTER]: 5 } };
}

function record(callId: string, threadId: string): ModelCallRecord {
  return {
    callId,
    threadId,
    logSeq: 1,
    planVersion: 0,
    format: "openai",
    requestHash: "ab".repeat(32),
    tokenEstimate: 10,
  } as ModelCallRecord;
}

/** Ids (thread, message, tool call, model call, tenant): no NUL, at most MAX_ID_LENGTH, the same on every backend. */
export function idCases(opener: StoreOpener, title: (t: string) => string): void {
  async function expectRefused(attempt: Promise<unknown>, field: string, pattern: RegExp) {
    const error = await rejection(attempt, ValidationError);
    expect(error.where.field ?? "").toContain(field);
    expect(error.message).toMatch(pattern);
  }

  it(title("a thread id with NUL or over the length bound is a ValidationError in every store"), async () => {
    const { stores } = await opener.fresh();
    for (const [bad, pattern] of [
      [NUL, /NUL/],
      [LONG, new RegExp(`at most ${MAX_ID_LENGTH} characters`)],
    ] as const) {
      await expectRefused(stores.log.append(bad, 0, [stored(0, "m0")]), "threadId", pattern);
      await expectRefused(stores.log.read(bad), "threadId", pattern);
      await expectRefused(stores.log.length(bad), "threadId", pattern);
      await expectRefused(stores.plans.latest(bad), "threadId", pattern);
      const plan = createPlan({ threadId: bad, version: 1, basedOnSeq: 0, actions: [] });
      await expectRefused(stores.plans.commit(plan, 0), "threadId", pattern);
      await expectRefused(stores.calls.list(bad), "threadId", pattern);
      await expectRefused(stores.calls.recent!(bad, 3), "threadId", pattern);
      await expectRefused(stores.calls.record(record("c1", bad)), "threadId", pattern);
    }
    expect(await stores.log.threads()).toEqual([]);
  });

  it(title("a thread id of exactly the bound is stored and read back"), async () => {
    const { stores } = await opener.fresh();
    await stores.log.append(LONGEST, 0, [stored(0, "m0")]);
    expect((await stores.log.read(LONGEST)).map((e) => e.message.id)).toEqual(["m0"]);
  });

  it(
    title("message and tool-call ids with NUL are refused naming the field; nothing is written"),
    async () => {
      const { stores } = await opener.fresh();
      await expectRefused(stores.log.append("t", 0, [stored(0, NUL)]), "id", /NUL/);
      await expectRefused(stores.log.append("t", 0, [callMessage(NUL)]), "parts[0].callId", /NUL/);
      await expectRefused(stores.log.append("t", 0, [callMessage(LONG)]), "parts[0].callId", /at most/);
      expect(await stores.log.length("t")).toBe(0);
    },
  );

  it(title("a NUL in a metadata string or key is refused naming the field; nothing is written"), async () => {
    const { stores } = await opener.fresh();
    await expectRefused(
      stores.log.append("t", 0, [stored(0, "m0", "hi", { note: "a\u0000b" })]),
      "meta.note",
      /NUL/,
    );
    await expectRefused(
      stores.log.append("t", 0, [stored(0, "m0", "hi", { trace: { "k\u0000": [1] } })]),
      "meta.trace.k",
      /NUL/,
    );
    expect(await stores.log.length("t")).toBe(0);
    // Through a log (what the engine appends), the schema refuses it first, with the same field.
    const error = await rejection(
      (async () =>
        ThreadLog.empty("t").append([{ id: "m0", role: "user", parts: [], meta: { note: "\u0000" } }]))(),
      ValidationError,
    );
    expect(error.where).toMatchObject({ messageId: "m0", field: "meta.note" });
    // NUL in a part's text is stored and read back on every backend (bodies are JSON text).
    await stores.log.append("t", 0, [stored(0, "m0", "NUL \u0000 inside", { note: "\u0001" })]);
    expect((await stores.log.read("t"))[0]!.message.parts).toEqual([
      { type: "text", text: "NUL \u0000 inside" },
    ]);
  });

  it(title("a message without parts is stored and read back alike on every backend"), async () => {
    // Kept, not refused: the LangChain wing logs an empty message (content "") as one without parts and gives it
    // back as content "", and a model reply without content (Anthropic's content: []) converts to one.
    const { stores } = await opener.fresh();
    const log = ThreadLog.from("t", [
      { id: "u0", role: "user", parts: [{ type: "text", text: "hi" }] },
      { id: "a0", role: "assistant", parts: [] },
      { id: "u1", role: "user", parts: [] },
    ]);
    await stores.log.append(
      "t",
      0,
      log.messages.map((message) => ({ message, tokens: { [COUNTER]: 4 } })),
    );
    expect((await stores.log.read("t")).map((e) => e.message)).toEqual(log.messages);
  });

  it(title("model call ids with NUL are refused on record, get and setUsage"), async () => {
    const { stores } = await opener.fresh();
    await expectRefused(stores.calls.record(record(NUL, "t")), "callId", /NUL/);
    await expectRefused(stores.calls.get(NUL), "callId", /NUL/);
    await expectRefused(stores.calls.setUsage(LONG, { inputTokens: 3 }), "callId", /at most/);
    expect(await stores.calls.list("t")).toEqual([]);
  });

  it(
    title("a reader's tenant with NUL, and an unknown key in an artifact, are refused by name"),
    async () => {
      const { stores } = await opener.fresh();
      const { artifactId } = await stores.artifacts.put({ content: "x", tenant: "acme" });
      await expectRefused(stores.artifacts.get(artifactId, { tenant: NUL }), "tenant", /NUL/);
      await expectRefused(
        stores.artifacts.put({ content: "x", tenant: "acme", meta: { deep: true } } as never),
        "meta",
        /nrecognized key/,
      );
    },
  );
}
