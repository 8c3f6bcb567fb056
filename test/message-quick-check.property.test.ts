/**
 * The quick check an append runs before the schema (`isMessageInput` and its part and metadata checks) must never
 * accept what `messageInputSchema` refuses, must accept the ordinary messages the schema accepts (or appends gain
 * nothing), and `prepareBatch` must give the same entries — the same values, keys in the same order — or the same
 * error with it and without it. Random valid messages with their keys in any order, the same with one value
 * broken or one key added, and arbitrary values.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LedgerError } from "../src/errors/ledger-error.js";
import { type BatchTarget, prepareBatch } from "../src/log/append-batch.js";
import type { CallRef } from "../src/log/groups.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import type { MessageInput } from "../src/log/message.js";
import { isMessageInput, isMeta, isPart } from "../src/log/message-quick-check.js";
import {
  MAX_ID_LENGTH,
  MAX_META_DEPTH,
  messageInputSchema,
  metaInputSchema,
  metaSchema,
  partSchema,
} from "../src/log/message-schema.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { arbitraryLogInputs, fcParams, textArb } from "./support/arbitrary-log.js";
import { listTrajectories, trajectoriesAvailable } from "./support/trajectories.js";

// ---------------------------------------------------------------------------------------------------------------
// valid messages

/** Marks an optional field left out (as opposed to present and `undefined`). */
const ABSENT = Symbol("absent");

const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined | typeof ABSENT> =>
  fc.oneof(fc.constant(ABSENT), fc.constant(undefined), arb);

/** An object with the given fields (absent ones left out) in a random key order. */
function shuffledRecord(
  fields: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(fields).chain((value) => {
    const entries = Object.entries(value).filter(([, v]) => v !== ABSENT);
    return fc
      .shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length })
      .map((shuffled) => Object.fromEntries(shuffled));
  });
}

const noNul = (s: string): boolean => !s.includes("\u0000");
const idArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 10 }).filter(noNul) },
  { weight: 1, arbitrary: fc.constantFrom("x".repeat(MAX_ID_LENGTH), "ü😀", " ") },
);
const nameArb = fc.oneof(
  fc.constantFrom("search", "read_file", "ünï"),
  fc.string({ minLength: 1, maxLength: 6 }),
);
const stringArb = fc.oneof(textArb, fc.string({ maxLength: 6 }));

const partArbs = {
  text: shuffledRecord({ type: fc.constant("text"), text: textArb }),
  tool_call: shuffledRecord({ type: fc.constant("tool_call"), callId: idArb, name: nameArb, args: textArb }),
  tool_result: shuffledRecord({
    type: fc.constant("tool_result"),
    callId: idArb,
    content: textArb,
    isError: optional(fc.boolean()),
  }),
  reasoning: shuffledRecord({
    type: fc.constant("reasoning"),
    text: textArb,
    signature: optional(stringArb),
    redacted: optional(stringArb),
  }),
  media: shuffledRecord({
    type: fc.constant("media"),
    mediaType: fc.constantFrom("image/png", "application/pdf"),
    uri: fc.string({ minLength: 1, maxLength: 8 }),
    sizeBytes: optional(fc.oneof(fc.nat(), fc.constantFrom(-0, Number.MAX_SAFE_INTEGER))),
    alt: optional(stringArb),
  }),
};

const partsByRole = {
  system: fc.oneof(partArbs.text),
  user: fc.oneof(partArbs.text, partArbs.media),
  assistant: fc.oneof(partArbs.text, partArbs.reasoning, partArbs.tool_call),
  tool: fc.oneof(partArbs.tool_result),
};
const anyPartArb = fc.oneof(...Object.values(partArbs));

/** `levels` nested arrays or objects around `inner`. */
function nested(levels: number, inner: unknown, asObject: boolean): unknown {
  let value = inner;
  for (let i = 0; i < levels; i++) value = asObject ? { k: value } : [value];
  return value;
}

const KNOWN_META_KEYS = new Set(["sourceId", "toolName", "durability", "sensitivity", "pinned", "createdAt"]);
const metaKeyArb = fc
  .oneof(fc.string({ maxLength: 6 }), fc.constantFrom("0", "7", "10", "sourceLine", "source", "é"))
  .filter((k) => noNul(k) && k !== "__proto__" && !KNOWN_META_KEYS.has(k));
const metaValueArb = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(-0, 0, 1e21, 5e-324, "\uD83D", "", null) },
  // Up to the depth limit: a value's innermost array or object may sit MAX_META_DEPTH - 2 levels below it.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: MAX_META_DEPTH - 4, max: MAX_META_DEPTH - 1 }), fc.boolean())
      .map(([levels, asObject]) => nested(levels, 1, asObject)),
  },
);

const metaArb = fc
  .tuple(
    shuffledRecord({
      sourceId: optional(fc.string({ maxLength: 6 }).filter(noNul)),
      toolName: optional(nameArb.filter(noNul)),
      durability: optional(fc.constantFrom("ephemeral", "anchoring", "replayable", "non-replayable")),
      sensitivity: optional(fc.constantFrom("public", "internal", "confidential", "restricted")),
      pinned: optional(fc.boolean()),
      createdAt: optional(fc.constant("2026-01-01T00:00:00.000Z")),
    }),
    fc.array(fc.tuple(metaKeyArb, metaValueArb), { maxLength: 4 }),
    fc.nat(),
  )
  .map(([known, extra, at]) => {
    // Caller keys before, between and after the typed ones: zod's output puts the typed ones first.
    const entries = Object.entries(known);
    entries.splice(at % (entries.length + 1), 0, ...extra);
    return Object.fromEntries(entries);
  });

const roleArb = fc.constantFrom("system", "user", "assistant", "tool") as fc.Arbitrary<
  keyof typeof partsByRole
>;

/** Messages as callers write them: mostly parts their role allows, sometimes any part (appends refuse those). */
const messageArb: fc.Arbitrary<Record<string, unknown>> = roleArb.chain((role) =>
  shuffledRecord({
    id: optional(idArb),
    role: fc.constant(role),
    parts: fc.array(
      fc.oneof({ weight: 6, arbitrary: partsByRole[role] }, { weight: 1, arbitrary: anyPartArb }),
      {
        maxLength: 4,
      },
    ),
    meta: optional(metaArb),
  }),
);

// ---------------------------------------------------------------------------------------------------------------
// broken messages

class Box {
  readonly text = "boxed";
}

/** Values that break a field, sit at the edge of a rule, or are objects the quick check leaves to the schema. */
const breakArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(
      undefined,
      null,
      "",
      "\u0000",
      "a\u0000b",
      "x".repeat(MAX_ID_LENGTH + 1),
      true,
      "text",
      "media",
      "tool_result",
      "ephemeral",
      "secret",
      [],
      {},
    ),
  },
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      -1,
      -0,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      2 ** 53,
      Number.MAX_SAFE_INTEGER,
    ),
  },
  fc.constant(null).map(() => {
    const holey: unknown[] = [];
    holey[1] = 1; // index 0 is a hole
    return holey;
  }),
  fc.constant(null).map(() => new Map([["pinned", true]])),
  fc.constant(null).map(() => new Date(0)),
  fc.constant(null).map(() => new Box()),
  fc.constant(null).map(() => Object.create(null)),
  fc.constant(null).map(() => Object.assign(Object.create(null), { type: "text", text: "a" })),
  fc.constant(null).map(() => JSON.parse('{"__proto__": {"pinned": "no"}, "a": 1}')),
  fc.constant(null).map(() => ({ "k\u0000": 1 })),
  fc.constant(null).map(() => ({ type: "text", text: "a" })),
  fc
    .tuple(fc.integer({ min: MAX_META_DEPTH - 2, max: MAX_META_DEPTH + 1 }), fc.boolean())
    .map(([levels, asObject]) => nested(levels, "x", asObject)),
  fc.jsonValue({ maxDepth: 2 }),
  fc.anything({
    maxDepth: 2,
    withNullPrototype: true,
    withObjectString: true,
    withBoxedValues: true,
    withSparseArray: true,
    withMap: true,
    withDate: true,
  }),
);

const pathArb: fc.Arbitrary<ReadonlyArray<string | number>> = fc.oneof(
  fc.constantFrom<ReadonlyArray<string | number>>(
    ["id"],
    ["role"],
    ["parts"],
    ["meta"],
    ["extra"],
    ["__proto__"],
    ["parts", 0],
    ["parts", 1],
    ["parts", 0, "type"],
    ["parts", 0, "text"],
    ["parts", 0, "callId"],
    ["parts", 0, "name"],
    ["parts", 0, "args"],
    ["parts", 0, "content"],
    ["parts", 0, "isError"],
    ["parts", 0, "signature"],
    ["parts", 0, "sizeBytes"],
    ["parts", 0, "uri"],
    ["parts", 0, "extra"],
    ["parts", 0, "__proto__"],
    ["meta", "pinned"],
    ["meta", "durability"],
    ["meta", "sensitivity"],
    ["meta", "sourceId"],
    ["meta", "custom"],
    ["meta", "__proto__"],
    ["meta", "custom", "deeper"],
    ["meta", "custom", 0],
  ),
  fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.nat(3)), { minLength: 1, maxLength: 4 }),
);

/** An array or an object with the prototype of a literal or none: what breaks may reach into (not a `String`). */
function isContainer(value: unknown): value is object {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return Array.isArray(value) || prototype === Object.prototype || prototype === null;
}

/**
 * A copy of `value` with `replacement` at `path` (an own property even for `__proto__`), copying only the objects
 * on the path; a path through a non-object leaves the value as it is.
 */
function setAt(value: unknown, path: ReadonlyArray<string | number>, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  if (!isContainer(value)) return value;
  const copy = Array.isArray(value)
    ? [...value]
    : Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value));
  const [key, ...rest] = path as [string | number, ...Array<string | number>];
  const next = setAt((value as Record<string | number, unknown>)[key], rest, replacement);
  Object.defineProperty(copy, key, { value: next, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** Every path inside `value` (to arrays, objects and leaves), the root left out. */
function pathsIn(
  value: unknown,
  path: ReadonlyArray<string | number> = [],
): Array<ReadonlyArray<string | number>> {
  if (!isContainer(value)) return [];
  const keys: Array<string | number> = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return keys.flatMap((key) => {
    const at = [...path, key];
    return [at, ...pathsIn((value as Record<string | number, unknown>)[key], at)];
  });
}

/** One break: a value put at a path the message has (or a key added beside it), or at a path from `pathArb`. */
const breakStepArb = fc.tuple(
  fc.nat(),
  // Mostly the value at the path is replaced; sometimes a key is added beside it.
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom("extra", "__proto__", "custom", "pinned", "callId") },
  ),
  // Mostly a path the message has; sometimes one from `pathArb` (which may not exist, adding keys).
  fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: pathArb }),
  breakArb,
);
type BreakStep = [number, string | undefined, ReadonlyArray<string | number> | null, unknown];
const breaksArb = fc.array(breakStepArb, { minLength: 1, maxLength: 2 });

function applyBreak(message: unknown, [pick, addKey, fixedPath, value]: BreakStep): unknown {
  if (fixedPath !== null) return setAt(message, fixedPath, value);
  const paths = pathsIn(message);
  if (paths.length === 0) return setAt(message, ["extra"], value);
  const path = paths[pick % paths.length]!;
  return setAt(message, addKey === undefined ? path : [...path.slice(0, -1), addKey], value);
}

const brokenMessageArb = fc
  .tuple(messageArb, breaksArb)
  .map(([message, breaks]) => breaks.reduce<unknown>(applyBreak, message));

// ---------------------------------------------------------------------------------------------------------------
// comparing outcomes

/**
 * A value in a form `toEqual` compares strictly: objects as their key/value pairs in key order with whether they
 * are plain, `-0` apart from `0`, and whether each object is frozen.
 */
function exact(value: unknown): unknown {
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : value;
  if (typeof value !== "object" || value === null) return value;
  const frozen = Object.isFrozen(value);
  if (Array.isArray(value)) return { array: Array.from(value, exact), frozen };
  const plain = Object.getPrototypeOf(value) === Object.prototype;
  const entries = Object.keys(value).map((k) => [k, exact((value as Record<string, unknown>)[k])]);
  return { entries, plain, frozen };
}

/** What `prepareBatch` gives: its entries and pending calls, or the error it throws. */
function outcome(target: BatchTarget, inputs: ReadonlyArray<unknown>, quickCheck: boolean): unknown {
  try {
    const { entries, pending } = prepareBatch(target, inputs as ReadonlyArray<MessageInput>, { quickCheck });
    return { entries: exact(entries), pending: exact([...pending]) };
  } catch (error) {
    if (!(error instanceof LedgerError)) throw error;
    return { error: error.name, code: error.code, message: error.message, where: error.where };
  }
}

/**
 * A log to append to whose pending calls are every call id the batch's results name, so the results pair and the
 * messages reach the end of `prepareBatch` (where their copies are compared); and whose one message is `taken`.
 */
function targetFor(inputs: ReadonlyArray<unknown>): BatchTarget {
  const pending = new Map<string, CallRef>();
  for (const input of inputs) {
    const parts = (input as { parts?: unknown } | null)?.parts;
    if (!Array.isArray(parts)) continue;
    for (const part of parts) {
      const { type, callId } = (part ?? {}) as { type?: unknown; callId?: unknown };
      if (type === "tool_result" && typeof callId === "string")
        pending.set(callId, { seq: 0, partIndex: 0, callId, name: "tool" });
    }
  }
  return {
    threadId: "t",
    length: 1,
    pendingCalls: pending,
    seqOf: (id) => (id === "taken" ? 0 : undefined),
    holdsId: (id) => id === "taken",
  };
}

function hasProtoKey(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  return Object.keys(value).some(
    (k) => k === "__proto__" || hasProtoKey((value as Record<string, unknown>)[k]),
  );
}

const anythingArb = fc.anything({
  withNullPrototype: true,
  withObjectString: true,
  withBoxedValues: true,
  withSparseArray: true,
});

// ---------------------------------------------------------------------------------------------------------------

describe("message quick check (property)", () => {
  it("accepts only what the schemas accept", () => {
    fc.assert(
      fc.property(fc.oneof(messageArb, brokenMessageArb, anythingArb), (value) => {
        if (isMessageInput(value)) expect(messageInputSchema.safeParse(value).success).toBe(true);
      }),
      fcParams(3000),
    );
    // Parts and metadata alone, as the stores' row check uses them.
    const partOrMetaArb = fc.oneof(
      anyPartArb,
      metaArb,
      fc.tuple(anyPartArb, breaksArb).map(([part, breaks]) => breaks.reduce<unknown>(applyBreak, part)),
      fc.tuple(metaArb, breaksArb).map(([meta, breaks]) => breaks.reduce<unknown>(applyBreak, meta)),
      anythingArb,
    );
    fc.assert(
      fc.property(partOrMetaArb, (value) => {
        if (isPart(value)) expect(partSchema.safeParse(value).success).toBe(true);
        if (isMeta(value, true)) expect(metaInputSchema.safeParse(value).success).toBe(true);
        if (isMeta(value, false)) expect(metaSchema.safeParse(value).success).toBe(true);
      }),
      fcParams(3000),
    );
  });

  it("accepts every ordinary message the schema accepts, so appends take the quick path", () => {
    fc.assert(
      fc.property(fc.oneof(messageArb, brokenMessageArb), (value) => {
        // Objects that are not plain and `__proto__` keys are left to the schema on purpose.
        if (hasProtoKey(value)) return;
        const accepted = messageInputSchema.safeParse(value).success;
        if (accepted && !isMessageInput(value)) {
          const plainAll = (v: unknown): boolean =>
            typeof v !== "object" ||
            v === null ||
            (Array.isArray(v)
              ? v.every(plainAll)
              : Object.getPrototypeOf(v) === Object.prototype && Object.values(v).every(plainAll));
          expect(plainAll(value)).toBe(false);
        }
      }),
      fcParams(3000),
    );
    fc.assert(
      fc.property(messageArb, (value) => {
        expect(isMessageInput(value)).toBe(messageInputSchema.safeParse(value).success);
      }),
      fcParams(1000),
    );
  });

  it("leaves prepareBatch's entries and errors as the schema alone gives them", () => {
    const batchArb = fc.array(
      fc.oneof(
        { weight: 4, arbitrary: messageArb },
        { weight: 3, arbitrary: brokenMessageArb },
        { weight: 1, arbitrary: anythingArb },
        { weight: 1, arbitrary: fc.constantFrom({ id: "taken", role: "user", parts: [] }) },
      ),
      { minLength: 1, maxLength: 4 },
    );
    fc.assert(
      fc.property(batchArb, (inputs) => {
        const target = targetFor(inputs);
        expect(outcome(target, inputs, true)).toEqual(outcome(target, inputs, false));
      }),
      fcParams(3000),
    );
  });

  it("gives the same logs for whole valid threads, and for the same with one message broken", () => {
    fc.assert(
      fc.property(arbitraryLogInputs(), fc.nat(), breaksArb, (inputs, at, breaks) => {
        const target = ThreadLog.empty("t");
        expect(outcome(target, inputs, true)).toEqual(outcome(target, inputs, false));
        if (inputs.length === 0) return;
        const index = at % inputs.length;
        const broken = [...inputs] as unknown[];
        broken[index] = breaks.reduce<unknown>(applyBreak, inputs[index]);
        expect(outcome(target, broken, true)).toEqual(outcome(target, broken, false));
      }),
      fcParams(300),
    );
  });
});

describe.skipIf(!trajectoriesAvailable)("message quick check on the real trajectories", () => {
  it("takes every message of every trajectory, with the same log as the schema gives", () => {
    for (const file of listTrajectories()) {
      const inputs = parseTranscript(file.text, { source: file.name });
      const refused = inputs.findIndex((input) => !isMessageInput(input));
      expect(refused, `${file.name}: message ${refused} refused by the quick check`).toBe(-1);
      const target = ThreadLog.empty(file.name);
      expect(outcome(target, inputs, true)).toEqual(outcome(target, inputs, false));
    }
  });
});
