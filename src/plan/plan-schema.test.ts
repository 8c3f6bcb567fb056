import { describe, expect, expectTypeOf, it } from "vitest";
import { ValidationError } from "../errors/ledger-error.js";
import {
  type ActionKind,
  type ClearExcerpt,
  type CompactionPlan,
  createPlan,
  emptyPlan,
  type PlanAction,
  type RecordByKind,
} from "./compaction-plan.js";
import { type PlanFromSchema, parsePlan, serializePlan } from "./plan-schema.js";

const plan: CompactionPlan = createPlan({
  threadId: "t",
  version: 3,
  basedOnSeq: 5,
  actions: [
    { kind: "include", span: ["m0"], record: { kind: "include" }, strategy: "pin", reason: "system prompt" },
    {
      kind: "clear",
      span: ["m1", "m2"],
      record: {
        kind: "clear",
        clearArgs: true,
        cleared: [{ messageId: "m2", callId: "c1", toolName: "search", chars: 48_000 }],
        excerpts: [
          { messageId: "m2", partIndex: 0, text: "[result cleared: search, 47 KB; key lines:]\nKX-1 ok" },
        ],
      },
      strategy: "tool-retention",
      reason: "older than 2 turns",
    },
    {
      kind: "summarize",
      span: ["m3"],
      record: {
        kind: "summarize",
        summary: "the user wants ü ✓",
        structured: { goals: ["ship"], openItems: [] },
        summarizerId: "model:small",
        promptVersion: "v2",
        spanHash: "ab12",
      },
      strategy: "summarizer",
      reason: "",
    },
    {
      kind: "externalize",
      span: ["m4"],
      record: { kind: "externalize", artifactId: "art-1", summary: "", sizeChars: 9000 },
      strategy: "externalizer",
      reason: "big",
    },
    {
      kind: "drop",
      span: ["m1"],
      record: { kind: "drop", reason: "over budget" },
      strategy: "fallback",
      reason: "x",
    },
  ],
});

/** The ValidationError `parsePlan` throws for an input. */
function rejection(input: unknown): ValidationError {
  try {
    parsePlan(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("parsePlan accepted the input");
}

/** `plan` as plain JSON data with one action's fields overridden. */
function withAction(index: number, patch: Record<string, unknown>): unknown {
  const data = JSON.parse(serializePlan(plan)) as { actions: Record<string, unknown>[] };
  data.actions[index] = { ...data.actions[index], ...patch };
  return data;
}

type SchemaAction = PlanFromSchema["actions"][number];
type RecordKeys<K extends ActionKind> = keyof Extract<SchemaAction, { kind: K }>["record"];

describe("plan schema", () => {
  // The inferred type is not assignable to CompactionPlan as a whole: zod's `.optional()` infers `T | undefined`,
  // which exactOptionalPropertyTypes rejects (parsePlan casts). Keys and kinds must still match one to one.
  it("has the same kinds, top-level keys and record keys as the hand-written types", () => {
    expectTypeOf<keyof PlanFromSchema>().toEqualTypeOf<keyof CompactionPlan>();
    expectTypeOf<SchemaAction["kind"]>().toEqualTypeOf<ActionKind>();
    expectTypeOf<keyof SchemaAction>().toEqualTypeOf<keyof PlanAction>();
    expectTypeOf<RecordKeys<"include">>().toEqualTypeOf<keyof RecordByKind["include"]>();
    expectTypeOf<RecordKeys<"clear">>().toEqualTypeOf<keyof RecordByKind["clear"]>();
    expectTypeOf<RecordKeys<"summarize">>().toEqualTypeOf<keyof RecordByKind["summarize"]>();
    expectTypeOf<RecordKeys<"externalize">>().toEqualTypeOf<keyof RecordByKind["externalize"]>();
    expectTypeOf<RecordKeys<"drop">>().toEqualTypeOf<keyof RecordByKind["drop"]>();
  });

  it("has the same keys in a clear's excerpts as the hand-written ClearExcerpt", () => {
    type SchemaExcerpt = NonNullable<Extract<SchemaAction, { kind: "clear" }>["record"]["excerpts"]>[number];
    expectTypeOf<keyof SchemaExcerpt>().toEqualTypeOf<keyof ClearExcerpt>();
    expectTypeOf<SchemaExcerpt["text"]>().toEqualTypeOf<ClearExcerpt["text"]>();
  });
});

describe("parsePlan and serializePlan", () => {
  it("round-trip a plan through a JSON string and through parsed JSON", () => {
    expect(parsePlan(serializePlan(plan))).toStrictEqual(plan);
    expect(parsePlan(JSON.parse(serializePlan(plan, 2)))).toStrictEqual(plan);
    expect(parsePlan(serializePlan(emptyPlan("t")))).toStrictEqual(emptyPlan("t"));
  });

  it("returns a deeply frozen plan", () => {
    const parsed = parsePlan(serializePlan(plan));
    expect(Object.isFrozen(parsed)).toBe(true);
    expect(Object.isFrozen(parsed.actions[1]!.record)).toBe(true);
    expect(Object.isFrozen(parsed.actions[1]!.span)).toBe(true);
  });

  it("indents on request", () => {
    expect(serializePlan(plan, 2)).toContain('\n  "threadId": "t"');
    expect(serializePlan(plan)).not.toContain("\n");
  });

  it("rejects text that is not JSON", () => {
    const error = rejection("{not json");
    expect(error.code).toBe("VALIDATION");
    expect(error.message).toMatch(/not valid JSON/);
  });

  it.each<[string, unknown, string, RegExp?]>([
    [
      "an empty summary",
      withAction(2, { record: { ...plan.actions[2]!.record, summary: "" } }),
      "actions[2].record.summary",
      /summary must not be empty/,
    ],
    ["a missing span", withAction(0, { span: undefined }), "actions[0].span"],
    ["an empty span", withAction(0, { span: [] }), "actions[0].span", /at least one message id/],
    ["an empty id in a span", withAction(1, { span: ["m1", ""] }), "actions[1].span[1]"],
    ["a number in a span", withAction(1, { span: ["m1", "m2", 7] }), "actions[1].span[2]", /got number/],
    ["a span that is not a list", withAction(0, { span: "m1" }), "actions[0].span", /array of message ids/],
    ["an unknown action kind", withAction(0, { kind: "shred" }), "actions[0].kind"],
    ["a record of another kind", withAction(4, { record: { kind: "include" } }), "actions[4].record.kind"],
    [
      "an empty drop reason",
      withAction(4, { record: { kind: "drop", reason: "" } }),
      "actions[4].record.reason",
    ],
    [
      "an empty artifact id",
      withAction(3, { record: { kind: "externalize", artifactId: "", summary: "" } }),
      "actions[3].record.artifactId",
    ],
    ["an empty strategy", withAction(0, { strategy: "" }), "actions[0].strategy"],
    ["an unknown key in an action", withAction(0, { extra: 1 }), "actions[0].extra", /Unrecognized key/],
    [
      "an unknown key in a record",
      withAction(0, { record: { kind: "include", x: 1 } }),
      "actions[0].record.x",
    ],
    [
      "a negative cleared size",
      withAction(1, {
        record: { kind: "clear", cleared: [{ messageId: "m", callId: "c", toolName: "t", chars: -1 }] },
      }),
      "actions[1].record.cleared[0].chars",
    ],
    [
      "an excerpt without text",
      withAction(1, { record: { kind: "clear", excerpts: [{ messageId: "m2" }] } }),
      "actions[1].record.excerpts[0].text",
    ],
    [
      "an excerpt with a fractional part index",
      withAction(1, { record: { kind: "clear", excerpts: [{ messageId: "m2", partIndex: 0.5, text: "" }] } }),
      "actions[1].record.excerpts[0].partIndex",
    ],
    [
      "an excerpt with an empty message id",
      withAction(1, { record: { kind: "clear", excerpts: [{ messageId: "", text: "x" }] } }),
      "actions[1].record.excerpts[0].messageId",
    ],
    ["a negative version", { ...plan, version: -1 }, "version"],
    ["a fractional basedOnSeq", { ...plan, basedOnSeq: 1.5 }, "basedOnSeq"],
    ["an unknown top-level key", { ...plan, extra: true }, "extra"],
    ["a missing thread id", { version: 0, basedOnSeq: 0, actions: [] }, "threadId"],
    ["null", null, "(plan)"],
    ["an array", [], "(plan)"],
  ])("rejects %s and names the field", (_name, input, field, message) => {
    const error = rejection(input);
    expect(error.where.field).toBe(field);
    expect(error.message).toContain(`field ${field}`);
    if (message !== undefined) expect(error.message).toMatch(message);
  });

  it("reads a clear record written before excerpts existed", () => {
    const old = withAction(1, { record: { kind: "clear", clearArgs: true } });
    expect(parsePlan(old).actions[1]!.record).toStrictEqual({ kind: "clear", clearArgs: true });
  });

  it("names the thread when the input has one", () => {
    expect(rejection({ ...plan, version: -1 }).where.threadId).toBe("t");
    expect(rejection({ version: 0 }).where.threadId).toBeUndefined();
  });
});
