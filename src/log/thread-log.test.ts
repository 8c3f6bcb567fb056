import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { text, validationError } from "../../test/support/builders.js";
import { ValidationError } from "../errors/ledger-error.js";
import { computeGroups } from "./groups.js";
import type { MessageInput, Part } from "./message.js";
import { ThreadLog } from "./thread-log.js";
import { turnIndexOf } from "./turns.js";

// ---------------------------------------------------------------------------------------------------------------
// builders

const callPart = (callId: string, name = "search"): Part => ({ type: "tool_call", callId, name, args: "{}" });
const resultPart = (callId: string, content = "ok"): Part => ({ type: "tool_result", callId, content });

const system = (t = "sys", id?: string): MessageInput => ({
  role: "system",
  parts: [text(t)],
  ...(id ? { id } : {}),
});
const user = (t = "hi", id?: string): MessageInput => ({
  role: "user",
  parts: [text(t)],
  ...(id ? { id } : {}),
});
const say = (t = "ok", id?: string): MessageInput => ({
  role: "assistant",
  parts: [text(t)],
  ...(id ? { id } : {}),
});
const calls = (...ids: string[]): MessageInput => ({
  role: "assistant",
  parts: ids.map((id) => callPart(id)),
});
const results = (...ids: string[]): MessageInput => ({
  role: "tool",
  parts: ids.map((id) => resultPart(id)),
});

/** Runs `fn`, expects a ValidationError and returns it. */

// ---------------------------------------------------------------------------------------------------------------

describe("ThreadLog.append", () => {
  it("returns a new value and leaves the old one unchanged", () => {
    const a = ThreadLog.from("t", [system(), user()]);
    const before = a.messages;
    const first = a.at(0);
    const b = a.append([say()]);
    expect(b).not.toBe(a);
    expect(a.length).toBe(2);
    expect(a.messages).toBe(before);
    expect(a.messages).toHaveLength(2);
    expect(a.at(2)).toBeUndefined();
    expect(b.length).toBe(3);
    // Structural sharing: the earlier messages are the very same objects.
    expect(b.at(0)).toBe(first);
    expect(b.messages.slice(0, 2)).toEqual(before);
    expect(b.messages[0]).toBe(before[0]);
  });

  it("returns the same reference for an empty batch", () => {
    const a = ThreadLog.from("t", [user()]);
    expect(a.append([])).toBe(a);
    const empty = ThreadLog.empty("t");
    expect(empty.append([])).toBe(empty);
  });

  it("assigns gap-free seqs and generates ids that avoid existing ones", () => {
    const log = ThreadLog.empty("t")
      .append([user("a", "msg-1"), user("b")])
      .append([say(), say("c", "mine")]);
    expect(log.messages.map((m) => m.seq)).toEqual([0, 1, 2, 3]);
    expect(log.messages.map((m) => m.id)).toEqual(["msg-1", "msg-1-1", "msg-2", "mine"]);
    expect(log.byId("msg-1-1")?.seq).toBe(1);
    expect(log.seqOf("mine")).toBe(3);
    expect(log.seqOf("nope")).toBeUndefined();
  });

  it("hashes role and parts only, deterministically", () => {
    const a = ThreadLog.from("t", [{ ...user("same", "x"), meta: { pinned: true } }]);
    const b = ThreadLog.from("other", [user("same", "y")]);
    expect(a.at(0)?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.at(0)?.hash).toBe(b.at(0)?.hash);
    const asSystem = ThreadLog.from("t", [system("same")]);
    expect(asSystem.at(0)?.hash).not.toBe(a.at(0)?.hash);
  });

  it("deeply freezes messages: mutation throws in strict mode", () => {
    const log = ThreadLog.from("t", [
      { role: "user", parts: [text("hi")], meta: { pinned: true, nested: { list: [1, 2] } } },
      calls("c1"),
    ]);
    const m = log.at(0)!;
    expect(Object.isFrozen(log.messages)).toBe(true);
    expect(Object.isFrozen(m)).toBe(true);
    expect(Object.isFrozen(m.parts)).toBe(true);
    expect(Object.isFrozen(m.parts[0])).toBe(true);
    expect(Object.isFrozen(m.meta)).toBe(true);
    // Test files are ES modules, hence strict mode: writes to frozen objects throw.
    expect(() => {
      (m as { id: string }).id = "changed";
    }).toThrow(TypeError);
    expect(() => {
      (m.parts[0] as { text: string }).text = "changed";
    }).toThrow(TypeError);
    expect(() => {
      (m.parts as Part[]).push(text("more"));
    }).toThrow(TypeError);
    expect(() => {
      ((m.meta.nested as { list: number[] }).list as number[]).push(3);
    }).toThrow(TypeError);
    expect(() => {
      (log.messages as unknown[]).pop();
    }).toThrow(TypeError);
    expect(() => {
      (log.at(1)!.parts[0] as { callId: string }).callId = "c2";
    }).toThrow(TypeError);
  });

  it("detaches stored messages from the caller's objects", () => {
    const meta = { tags: ["a"] };
    const parts: Part[] = [text("hi")];
    const input = { role: "user" as const, parts, meta };
    const log = ThreadLog.from("t", [input]);
    meta.tags.push("b");
    parts.push(text("later"));
    expect(log.at(0)?.meta.tags).toEqual(["a"]);
    expect(log.at(0)?.parts).toEqual([text("hi")]);
  });

  it("rejects an empty thread id", () => {
    expect(validationError(() => ThreadLog.empty("")).where.field).toBe("threadId");
  });
});

describe("ThreadLog.append validation (atomic: a bad batch appends nothing)", () => {
  const base = ThreadLog.from("t", [system(), user("q", "u1"), calls("c1")]);

  const cases: ReadonlyArray<{
    name: string;
    batch: ReadonlyArray<unknown>;
    index: number;
    field: string;
    messageId?: string;
    message: RegExp;
  }> = [
    {
      name: "duplicate id (already in the log)",
      batch: [say("a"), say("b", "u1")],
      index: 1,
      field: "id",
      messageId: "u1",
      message: /duplicate message id "u1"/,
    },
    {
      name: "duplicate id (inside the batch)",
      batch: [say("a", "x"), say("b", "x")],
      index: 1,
      field: "id",
      messageId: "x",
      message: /duplicate/,
    },
    {
      name: "orphaned result",
      batch: [results("c1"), results("nope")],
      index: 1,
      field: "parts[0].callId",
      messageId: "msg-4",
      message: /orphaned result/,
    },
    {
      name: "second result for an answered call",
      batch: [results("c1"), results("c1")],
      index: 1,
      field: "parts[0].callId",
      message: /orphaned/,
    },
    {
      name: "reused pending call id (across batches)",
      batch: [say(), calls("c1")],
      index: 1,
      field: "parts[0].callId",
      messageId: "msg-4",
      message: /reused while the earlier call/,
    },
    {
      name: "reused pending call id (inside one message)",
      batch: [calls("c2", "c2")],
      index: 0,
      field: "parts[1].callId",
      message: /reused/,
    },
    {
      name: "tool_call part in a system message",
      batch: [{ role: "system", parts: [callPart("z")] }],
      index: 0,
      field: "parts[0].type",
      message: /a system message cannot hold a tool_call part/,
    },
    {
      name: "text part in a tool message",
      batch: [{ role: "tool", parts: [resultPart("c1"), text("x")] }],
      index: 0,
      field: "parts[1].type",
      message: /tool message cannot hold a text part/,
    },
    {
      name: "tool_result part in an assistant message",
      batch: [{ role: "assistant", parts: [resultPart("c1")] }],
      index: 0,
      field: "parts[0].type",
      message: /assistant message cannot hold a tool_result/,
    },
    {
      name: "reasoning part in a user message",
      batch: [{ role: "user", parts: [{ type: "reasoning", text: "hm" }] }],
      index: 0,
      field: "parts[0].type",
      message: /user message cannot hold a reasoning/,
    },
    {
      name: "empty tool message",
      batch: [say(), { role: "tool", parts: [] }],
      index: 1,
      field: "parts",
      message: /at least one tool_result/,
    },
    {
      name: "unknown part type (zod)",
      batch: [{ id: "m", role: "user", parts: [{ type: "image", url: "x" }] }],
      index: 0,
      field: "parts[0].type",
      messageId: "m",
      message: /invalid message/,
    },
    {
      name: "missing part field (zod)",
      batch: [{ role: "user", parts: [{ type: "text" }] }],
      index: 0,
      field: "parts[0].text",
      message: /expected string/,
    },
    {
      name: "empty call id (zod)",
      batch: [{ role: "assistant", parts: [{ type: "tool_call", callId: "", name: "f", args: "" }] }],
      index: 0,
      field: "parts[0].callId",
      message: /non-empty/,
    },
    {
      name: "unknown key on a part (zod)",
      batch: [{ role: "user", parts: [{ type: "text", text: "a", extra: 1 }] }],
      index: 0,
      field: "parts[0].extra",
      message: /extra/,
    },
    {
      name: "unknown role (zod)",
      batch: [user(), { role: "function", parts: [] }],
      index: 1,
      field: "role",
      message: /invalid message/,
    },
    {
      name: "unknown top-level key (zod)",
      batch: [{ role: "user", parts: [], content: "x" }],
      index: 0,
      field: "content",
      message: /content/,
    },
    {
      name: "empty id (zod)",
      batch: [{ id: "", role: "user", parts: [] }],
      index: 0,
      field: "id",
      message: /non-empty/,
    },
  ];

  it.each(cases)("$name", ({ batch, index, field, messageId, message }) => {
    const messagesBefore = base.messages;
    const pendingBefore = [...base.pendingCalls];
    const error = validationError(() => base.append(batch as ReadonlyArray<MessageInput>));
    expect(error.code).toBe("VALIDATION");
    expect(error.where.threadId).toBe("t");
    expect(error.where.index).toBe(index);
    expect(error.where.field).toBe(field);
    if (messageId !== undefined) expect(error.where.messageId).toBe(messageId);
    expect(error.message).toMatch(message);
    expect(error.message).toContain(`batch index ${index}`);
    // Nothing was appended, and the store still extends in place from the untouched value.
    expect(base.length).toBe(3);
    expect(base.messages).toBe(messagesBefore);
    expect([...base.pendingCalls]).toEqual(pendingBefore);
    const next = base.append([results("c1")]);
    expect(next.length).toBe(4);
    expect(next.at(3)?.id).toBe("msg-3");
  });

  it("names the generated id of the offending message", () => {
    const error = validationError(() => ThreadLog.empty("t").append([user(), results("x")]));
    expect(error.where).toMatchObject({ index: 1, messageId: "msg-1", field: "parts[0].callId" });
  });

  // BUG (thread-log.ts, #generateId ~line 256): a generated id may take an id that a later message of the same
  // batch supplies explicitly, so a batch whose caller ids are all unique is rejected as "duplicate message id".
  it("does not let a generated id collide with an explicit id later in the same batch", () => {
    const log = ThreadLog.from("t", [user("a"), user("b", "msg-0")]);
    expect(log.byId("msg-0")?.seq).toBe(1);
  });

  // BUG (thread-log.ts, cloneMeta ~line 272 / message-schema.ts metaSchema): meta is documented as
  // JSON-serializable but is not checked; a function makes structuredClone throw a DOMException DataCloneError
  // instead of a ValidationError naming the field (and a Date is stored as a Date, which JSON turns into a string).
  it("rejects a meta value that is not JSON-serializable with a ValidationError", () => {
    const error = validationError(() =>
      ThreadLog.from("t", [{ role: "user", parts: [text("a")], meta: { callback: () => 1 } }]),
    );
    expect(error.where.field).toBe("meta.callback");
  });
});

describe("pending calls", () => {
  it("tracks calls until answered, per log value", () => {
    const a = ThreadLog.from("t", [
      user(),
      { role: "assistant", parts: [text("let me"), callPart("c1", "grep")] },
    ]);
    expect([...a.pendingCalls.values()]).toEqual([{ seq: 1, partIndex: 1, callId: "c1", name: "grep" }]);
    const b = a.append([results("c1")]);
    expect(b.pendingCalls.size).toBe(0);
    expect(a.pendingCalls.size).toBe(1);
  });

  it("allows an id again once its call is answered, pairing each result with the nearest earlier call", () => {
    const log = ThreadLog.from("t", [calls("c"), results("c"), user(), calls("c"), results("c")]);
    expect(log.answersOf(1)).toEqual([0]);
    expect(log.answersOf(4)).toEqual([3]);
    expect(log.resultsOf(0)).toEqual([1]);
    expect(log.resultsOf(3)).toEqual([4]);
    expect(log.pendingCalls.size).toBe(0);
  });

  it("accepts results in a later batch and results not adjacent to their call", () => {
    const a = ThreadLog.from("t", [user(), calls("c1", "c2")]);
    const b = a.append([results("c2"), user("meanwhile"), say("still waiting")]).append([results("c1")]);
    expect(b.resultsOf(1)).toEqual([2, 5]);
    expect(b.answersOf(5)).toEqual([1]);
    expect(b.pendingCalls.size).toBe(0);
  });
});

describe("branching", () => {
  it("gives two independent logs when the same value is appended to twice", () => {
    const a = ThreadLog.from("t", [user(), calls("c1")]);
    const b1 = a.append([results("c1"), say("one", "x")]);
    const b2 = a.append([say("two", "x")]);
    expect(a.length).toBe(2);
    expect(b1.length).toBe(4);
    expect(b2.length).toBe(3);
    expect(b1.byId("x")?.seq).toBe(3);
    expect(b2.byId("x")?.seq).toBe(2);
    expect(b1.pendingCalls.size).toBe(0);
    expect(b2.pendingCalls.size).toBe(1);
    expect(b1.resultsOf(1)).toEqual([2]);
    expect(b2.resultsOf(1)).toEqual([]);
    expect(a.resultsOf(1)).toEqual([]);
    // Both branches keep growing independently.
    const c1 = b1.append([user("b1")]);
    const c2 = b2.append([results("c1"), user("b2")]);
    expect(c1.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    expect(c2.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant", "tool", "user"]);
    expect(c2.resultsOf(1)).toEqual([3]);
    expect(c1.resultsOf(1)).toEqual([2]);
    expect(b1.length).toBe(4);
    expect(b2.at(3)).toBeUndefined();
    // The shared prefix is shared, the branches' own messages are not.
    expect(c1.at(0)).toBe(c2.at(0));
    expect(c1.at(2)).not.toBe(c2.at(2));
  });

  it("hides later messages from an earlier value of the same history", () => {
    const a = ThreadLog.from("t", [calls("c1")]);
    const b = a.append([results("c1"), user("later", "later")]);
    expect(a.byId("later")).toBeUndefined();
    expect(a.seqOf("later")).toBeUndefined();
    expect(a.at(1)).toBeUndefined();
    expect(a.answersOf(1)).toEqual([]);
    expect(a.resultsOf(0)).toEqual([]);
    expect(b.resultsOf(0)).toEqual([1]);
    // An id used later in the history is free in a branch of the earlier value.
    expect(a.append([say("x", "later")]).byId("later")?.role).toBe("assistant");
    expect(b.byId("later")?.role).toBe("user");
  });
});

describe("answersOf / resultsOf", () => {
  it("links a tool message answering calls of two assistant messages to both", () => {
    const log = ThreadLog.from("t", [calls("a"), calls("b"), results("b", "a")]);
    expect(log.answersOf(2)).toEqual([0, 1]);
    expect(log.resultsOf(0)).toEqual([2]);
    expect(log.resultsOf(1)).toEqual([2]);
  });

  it("returns empty lists for messages without links and for out-of-range seqs", () => {
    const log = ThreadLog.from("t", [user(), calls("a")]);
    expect(log.answersOf(0)).toEqual([]);
    expect(log.resultsOf(0)).toEqual([]);
    expect(log.resultsOf(1)).toEqual([]);
    expect(log.answersOf(5)).toEqual([]);
    expect(log.resultsOf(-1)).toEqual([]);
  });
});

describe("groups", () => {
  it("makes one group per system, user and text-only assistant message", () => {
    const log = ThreadLog.from("t", [
      system("s", "s"),
      user("u", "u"),
      { id: "r", role: "assistant", parts: [{ type: "reasoning", text: "hm" }, text("answer")] },
      say("more", "a2"),
    ]);
    expect(log.groups.map((g) => [g.kind, g.seqs, g.messageIds, g.pending])).toEqual([
      ["system", [0], ["s"], false],
      ["user", [1], ["u"], false],
      ["assistant_text", [2], ["r"], false],
      ["assistant_text", [3], ["a2"], false],
    ]);
    expect(log.groups.map((g) => g.index)).toEqual([0, 1, 2, 3]);
  });

  it("puts parallel calls of one message and all their results in one tool_call group", () => {
    const log = ThreadLog.from("t", [user(), calls("a", "b"), results("a"), results("b"), say()]);
    expect(log.groups.map((g) => [g.kind, g.seqs])).toEqual([
      ["user", [0]],
      ["tool_call", [1, 2, 3]],
      ["assistant_text", [4]],
    ]);
  });

  it("lets non-adjacent results join their call's group; groups are ordered by their first message", () => {
    const log = ThreadLog.from("t", [
      calls("a"),
      user("u"),
      say("s"),
      results("a"),
      calls("b"),
      results("b"),
    ]);
    expect(log.groups.map((g) => [g.kind, g.seqs])).toEqual([
      ["tool_call", [0, 3]],
      ["user", [1]],
      ["assistant_text", [2]],
      ["tool_call", [4, 5]],
    ]);
    expect([0, 1, 2, 3, 4, 5].map((s) => log.groupIndexOf(s))).toEqual([0, 1, 2, 0, 3, 3]);
    expect(log.groupIndexOf(6)).toBe(-1);
  });

  it("marks a group pending while one of its calls has no result", () => {
    const a = ThreadLog.from("t", [user(), calls("a", "b"), results("a")]);
    expect(a.groups.map((g) => g.pending)).toEqual([false, true]);
    const b = a.append([results("b")]);
    expect(b.groups.map((g) => g.pending)).toEqual([false, false]);
    expect(a.groups.map((g) => g.pending)).toEqual([false, true]);
  });

  it("fuses the groups of two assistant messages answered by one tool message", () => {
    const log = ThreadLog.from("t", [calls("a"), user(), calls("b"), results("a", "b")]);
    expect(log.groups.map((g) => [g.kind, g.seqs])).toEqual([
      ["tool_call", [0, 2, 3]],
      ["user", [1]],
    ]);
  });

  // Regression: after one fusion the next merge must go into the surviving group, not the emptied one.
  it("fuses all groups touched by one tool message even after an earlier fusion", () => {
    const log = ThreadLog.from("t", [
      calls("x"), // 0, group 0
      calls("y"), // 1, group 1
      calls("z", "z2"), // 2, group 2
      calls("w"), // 3, group 3
      results("x", "z"), // 4: fuses groups 0 and 2
      results("y", "z2", "w"), // 5: answers 1, 2 (now group 0) and 3
    ]);
    expect(log.groups.map((g) => g.seqs)).toEqual([[0, 1, 2, 3, 4, 5]]);
  });

  it("is computed once per value and frozen", () => {
    const log = ThreadLog.from("t", [user(), calls("a"), results("a")]);
    expect(log.groups).toBe(log.groups);
    expect(Object.isFrozen(log.groups)).toBe(true);
    expect(Object.isFrozen(log.groups[1])).toBe(true);
    expect(Object.isFrozen(log.groups[1]!.seqs)).toBe(true);
  });

  it("gives the same groups whether extended incrementally or computed from scratch (random logs)", () => {
    fc.assert(
      fc.property(randomHistory(), ({ batches, fuse }) => {
        let log = ThreadLog.empty("t");
        for (const batch of batches) {
          log = log.append(batch);
          void log.groups; // force the incremental path on the next value
        }
        const scratch = ThreadLog.from("t", batches.flat());
        const expected = computeGroups(scratch).groups;
        expect(log.groups).toEqual(expected);
        expect(scratch.groups).toEqual(expected);
        if (!fuse) checkGroupInvariants(log);
      }),
      { numRuns: 200 },
    );
  });
});

describe("turns", () => {
  it("has no turns when empty and starts a turn at every user message", () => {
    expect(ThreadLog.empty("t").turns).toEqual([]);
    const log = ThreadLog.from("t", [user(), calls("a"), results("a"), say(), user(), say(), user()]);
    expect(log.turns.map((t) => [t.startSeq, t.endSeq])).toEqual([
      [0, 4],
      [4, 6],
      [6, 7],
    ]);
    expect(log.turns.map((t) => t.index)).toEqual([0, 1, 2]);
    expect(log.turns).toBe(log.turns);
  });

  // Note: thread-log.ts documents "messages before the first user message form turn 0" while turns.ts says they
  // "join turn 0"; the code does the latter (the first user message does not start a turn of its own).
  it("puts messages before the first user message into turn 0", () => {
    const log = ThreadLog.from("t", [system(), say("greeting"), user(), say(), user()]);
    expect(log.turns.map((t) => [t.startSeq, t.endSeq])).toEqual([
      [0, 4],
      [4, 5],
    ]);
    const noUser = ThreadLog.from("t", [system(), say()]);
    expect(noUser.turns.map((t) => [t.startSeq, t.endSeq])).toEqual([[0, 2]]);
  });

  it("finds the turn of a seq", () => {
    const log = ThreadLog.from("t", [user(), say(), user(), say(), say(), user()]);
    expect([0, 1, 2, 3, 4, 5].map((s) => turnIndexOf(log.turns, s))).toEqual([0, 0, 1, 1, 1, 2]);
    expect(turnIndexOf(log.turns, 6)).toBe(-1);
    expect(turnIndexOf(log.turns, -1)).toBe(-1);
  });
});

describe("immutability (property)", () => {
  it("never changes an earlier value, whatever is appended after it or branched from it", () => {
    fc.assert(
      fc.property(randomHistory(), fc.nat(), ({ batches }, pick) => {
        const values: ThreadLog[] = [ThreadLog.empty("t")];
        for (const batch of batches) values.push(values[values.length - 1]!.append(batch));
        const snapshots = values.map((v) =>
          JSON.stringify([v.messages, [...v.pendingCalls], v.groups, v.turns]),
        );
        // Branch from an earlier value, and try a bad batch on every value.
        const from = values[pick % values.length]!;
        from.append([user("branch")]);
        for (const v of values) expect(() => v.append([results("no-such-call")])).toThrow(ValidationError);
        values.forEach((v, i) => {
          expect(JSON.stringify([v.messages, [...v.pendingCalls], v.groups, v.turns])).toBe(snapshots[i]);
        });
      }),
      { numRuns: 100 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// random valid histories

type Step =
  | { kind: "user" | "say" | "system" }
  | { kind: "calls"; count: number }
  | { kind: "answer"; picks: number[] };

/**
 * Random valid histories split into batches. `fuse` says whether a tool message may answer calls of several
 * assistant messages (which fuses their groups); without it every tool message answers one assistant message.
 */
function randomHistory(): fc.Arbitrary<{ batches: MessageInput[][]; fuse: boolean }> {
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.constantFrom<Step>({ kind: "user" }, { kind: "say" }, { kind: "system" }),
    fc.integer({ min: 1, max: 3 }).map((count): Step => ({ kind: "calls", count })),
    fc.array(fc.nat(), { minLength: 1, maxLength: 3 }).map((picks): Step => ({ kind: "answer", picks })),
  );
  return fc
    .record({
      steps: fc.array(step, { maxLength: 30 }),
      cuts: fc.array(fc.nat({ max: 30 }), { maxLength: 5 }),
      fuse: fc.boolean(),
      reuseIds: fc.boolean(),
    })
    .map(({ steps, cuts, fuse, reuseIds }) => {
      const messages = buildMessages(steps, fuse, reuseIds);
      const bounds = [...new Set(cuts.map((c) => c % (messages.length + 1)))].sort((a, b) => a - b);
      const batches: MessageInput[][] = [];
      let start = 0;
      for (const end of [...bounds, messages.length]) {
        if (end > start) batches.push(messages.slice(start, end));
        start = Math.max(start, end);
      }
      return { batches, fuse };
    });
}

function buildMessages(steps: ReadonlyArray<Step>, fuse: boolean, reuseIds: boolean): MessageInput[] {
  const out: MessageInput[] = [];
  const pending: { id: string; seq: number }[] = [];
  let next = 0;
  for (const s of steps) {
    if (s.kind === "user") out.push(user());
    else if (s.kind === "say") out.push(say());
    else if (s.kind === "system") out.push(system());
    else if (s.kind === "calls") {
      const ids: string[] = [];
      for (let i = 0; i < s.count; i++) {
        // With reuseIds, ids come from a small pool, skipping ids that are still pending.
        let id = reuseIds ? `c${next++ % 4}` : `c${next++}`;
        while (pending.some((p) => p.id === id) || ids.includes(id)) id = `c${next++}`;
        ids.push(id);
      }
      for (const id of ids) pending.push({ id, seq: out.length });
      out.push(calls(...ids));
    } else if (s.kind === "answer" && pending.length > 0) {
      const chosen: { id: string; seq: number }[] = [];
      for (const p of s.picks) {
        const candidate = pending[p % pending.length]!;
        if (chosen.includes(candidate)) continue;
        if (!fuse && chosen.length > 0 && chosen[0]!.seq !== candidate.seq) continue;
        chosen.push(candidate);
      }
      for (const c of chosen) pending.splice(pending.indexOf(c), 1);
      out.push(results(...chosen.map((c) => c.id)));
    }
  }
  return out;
}

function checkGroupInvariants(log: ThreadLog): void {
  const count = new Array<number>(log.length).fill(0);
  let lastFirst = -1;
  for (const group of log.groups) {
    expect(group.seqs.length).toBeGreaterThan(0);
    expect([...group.seqs]).toEqual([...group.seqs].sort((a, b) => a - b));
    expect(group.seqs[0]!).toBeGreaterThan(lastFirst);
    lastFirst = group.seqs[0]!;
    for (const seq of group.seqs) {
      count[seq]! += 1;
      expect(log.groupIndexOf(seq)).toBe(group.index);
    }
    const pendingSeqs = new Set([...log.pendingCalls.values()].map((c) => c.seq));
    expect(group.pending).toBe(group.seqs.some((s) => pendingSeqs.has(s)));
  }
  expect(count.every((n) => n === 1)).toBe(true);
  for (const m of log.messages) {
    if (m.role !== "tool") continue;
    for (const callSeq of log.answersOf(m.seq))
      expect(log.groupIndexOf(callSeq)).toBe(log.groupIndexOf(m.seq));
  }
}

describe("metadata and ids beyond the bounds", () => {
  const deep = (n: number): unknown => {
    let v: unknown = "leaf";
    for (let i = 0; i < n; i++) v = { a: v };
    return v;
  };

  it("refuses metadata nested 2,000 deep with a ValidationError naming the field, not a stack overflow", () => {
    const log = ThreadLog.empty("t");
    const attempt = () =>
      log.append([
        { role: "user", parts: [{ type: "text", text: "hi" }], meta: { trace: deep(2_000) } as never },
      ]);
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(/nests deeper than 31 levels/);
    expect(attempt).toThrow(/meta\.trace\.a\.a/);
    expect(log.length).toBe(0);
  });

  it("accepts metadata as deep as the bound, and refuses values JSON cannot hold", () => {
    const log = ThreadLog.empty("t").append([
      { role: "user", parts: [{ type: "text", text: "hi" }], meta: { trace: deep(30) } as never },
    ]);
    expect(log.length).toBe(1);
    const nan = () => log.append([{ role: "user", parts: [], meta: { score: Number.NaN } as never }]);
    expect(nan).toThrow(/finite.*meta\.score/s);
    const date = () => log.append([{ role: "user", parts: [], meta: { at: new Date(0) } as never }]);
    expect(date).toThrow(/plain object/);
  });

  it("refuses a NUL character in a metadata string or key, naming the field (PostgreSQL cannot hold it)", () => {
    const log = ThreadLog.empty("t");
    const append =
      (meta: unknown, body = "hi") =>
      () =>
        log.append([{ id: "m1", role: "user", parts: [{ type: "text", text: body }], meta: meta as never }]);
    for (const [meta, field] of [
      [{ note: "a\u0000b" }, "meta.note"],
      [{ sourceId: "\u0000" }, "meta.sourceId"],
      [{ trace: { steps: ["ok", "x\u0000"] } }, "meta.trace.steps[1]"],
      [{ trace: { "k\u0000": 1 } }, "meta.trace.k\u0000"],
    ] as const) {
      const error = validationError(append(meta));
      expect(error.where).toMatchObject({ messageId: "m1", field });
      expect(error.message).toMatch(/NUL character/);
    }
    // Other control characters in meta, and NUL in a part's text (stored as JSON text, escaped), are taken.
    expect(append({ note: "a\u0001b" }, "NUL \u0000 in a body")().length).toBe(1);
  });

  it("refuses a message id with a NUL character or longer than 512 characters", () => {
    const log = ThreadLog.empty("t");
    expect(() => log.append([{ id: "a\u0000b", role: "user", parts: [] }])).toThrow(/NUL/);
    expect(() => log.append([{ id: "x".repeat(513), role: "user", parts: [] }])).toThrow(/at most 512/);
    expect(log.append([{ id: "x".repeat(512), role: "user", parts: [] }]).length).toBe(1);
  });
});
