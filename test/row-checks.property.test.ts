/**
 * The quick row checks a worker runs on every message it loads (`isStoredMessage`, `isTokenCounts`) must never
 * accept what the zod schemas refuse, and must accept the rows the stores write, so that the schemas still
 * name what is wrong with every bad row. Random valid messages, the same with one field broken, and arbitrary
 * JSON values.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../src/errors/ledger-error.js";
import { MAX_META_DEPTH } from "../src/log/message-schema.js";
import { storedFromRow } from "../src/stores/log-store.js";
import {
  isStoredMessage,
  isTokenCounts,
  storedMessageSchema,
  tokenCountsSchema,
} from "../src/stores/store-row-schemas.js";
import { arbitraryLog, fcParams } from "./support/arbitrary-log.js";

/** A stored message as a row holds it: the JSON of the log's message. */
const rowsArb = arbitraryLog({ maxOps: 12 }).map((log) =>
  log.messages.map((m) => JSON.parse(JSON.stringify(m)) as Record<string, unknown>),
);

/** Values that break one field of a row, or add one the schema does not know. */
const breakArb = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(""),
  fc.constant(-1),
  fc.constant(1.5),
  fc.constant(Number.POSITIVE_INFINITY),
  fc.constant("x".repeat(64)),
  fc.constant([]),
  fc.constant({}),
  fc.jsonValue(),
  fc.anything(),
);

/** Sets `value` at a random path inside `row` (or a new key at some depth). */
function broken(row: Record<string, unknown>, path: ReadonlyArray<string | number>, value: unknown): unknown {
  const copy = structuredClone(row) as Record<string | number, unknown>;
  let at: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    const next = at[key];
    if (typeof next !== "object" || next === null) break;
    at = next as Record<string | number, unknown>;
  }
  at[path[path.length - 1]!] = value;
  return copy;
}

const pathArb = fc.oneof(
  fc.constantFrom<ReadonlyArray<string | number>>(
    ["id"],
    ["seq"],
    ["role"],
    ["hash"],
    ["meta"],
    ["extra"],
    ["parts"],
    ["parts", 0],
    ["parts", 0, "type"],
    ["parts", 0, "text"],
    ["parts", 0, "callId"],
    ["parts", 0, "name"],
    ["parts", 0, "args"],
    ["parts", 0, "content"],
    ["parts", 0, "isError"],
    ["parts", 0, "extra"],
    ["meta", "pinned"],
    ["meta", "durability"],
    ["meta", "sensitivity"],
    ["meta", "toolName"],
    ["meta", "custom"],
  ),
  fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.nat(3)), { minLength: 1, maxLength: 4 }),
);

/** An array whose index 0 is a hole and index 1 holds `item`. */
function holey(item: unknown): unknown[] {
  const array: unknown[] = [];
  array[1] = item;
  return array;
}

function nestedArrays(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe("quick row checks (property)", () => {
  it("accept every row a log writes, and only rows the schema accepts", () => {
    fc.assert(
      fc.property(rowsArb, fc.array(fc.tuple(pathArb, breakArb), { maxLength: 6 }), (rows, breaks) => {
        for (const row of rows) {
          expect(isStoredMessage(row)).toBe(true);
          expect(storedMessageSchema.safeParse(row).success).toBe(true);
          for (const [path, value] of breaks) {
            const bad = broken(row, path, value);
            if (isStoredMessage(bad)) expect(storedMessageSchema.safeParse(bad).success).toBe(true);
          }
        }
      }),
      fcParams(200),
    );
  });

  it("never accept an arbitrary value the schemas refuse", () => {
    fc.assert(
      fc.property(fc.anything({ withObjectString: true, withNullPrototype: true }), (value) => {
        if (isStoredMessage(value)) expect(storedMessageSchema.safeParse(value).success).toBe(true);
        if (isTokenCounts(value)) expect(tokenCountsSchema.safeParse(value).success).toBe(true);
      }),
      fcParams(2000),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.oneof(fc.nat(), fc.integer(), fc.double(), fc.string())),
        (value) => {
          const ok = tokenCountsSchema.safeParse(value).success;
          if (isTokenCounts(value)) expect(ok).toBe(true);
          // Plain counts are the rows the stores write: the quick check takes them all (a `__proto__` key it
          // leaves to the schema, which drops it).
          if (
            Object.values(value).every((n) => Number.isSafeInteger(n) && (n as number) >= 0) &&
            !("" in value) &&
            !Object.hasOwn(value, "__proto__")
          ) {
            expect(isTokenCounts(value)).toBe(true);
          }
        },
      ),
      fcParams(500),
    );
    // A record's schema reads symbol keys (and refuses them), `for…in` does not.
    const withSymbol = { counter: 3, [Symbol("s")]: 1 };
    expect(tokenCountsSchema.safeParse(withSymbol).success).toBe(false);
    expect(isTokenCounts(withSymbol)).toBe(false);
  });

  it("refuse broken rows the schema refuses (so the schema names the field)", () => {
    const row = JSON.parse(
      JSON.stringify({
        id: "m1",
        seq: 0,
        role: "tool",
        parts: [{ type: "tool_result", callId: "c1", content: "ok" }],
        meta: { toolName: "search", extra: { nested: [1, null] } },
        hash: "a".repeat(64),
      }),
    ) as Record<string, unknown>;
    expect(isStoredMessage(row)).toBe(true);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...row, seq: -1 }, "seq"],
      [{ ...row, hash: "A".repeat(64) }, "hash"],
      [{ ...row, role: "robot" }, "role"],
      [{ ...row, unknown: 1 }, "unknown"],
      [{ ...row, parts: [{ type: "tool_result", callId: "", content: "ok" }] }, "parts[0].callId"],
      [{ ...row, meta: { pinned: "yes" } }, "meta.pinned"],
      [{ ...row, meta: { custom: Number.NaN } }, "meta.custom"],
      // Rules the quick check once missed (it took these rows, so the schema never named the field).
      [{ ...row, parts: [{ type: "tool_result", callId: "c\u0000", content: "ok" }] }, "parts[0].callId"],
      [
        { ...row, parts: [{ type: "tool_result", callId: "c".repeat(513), content: "ok" }] },
        "parts[0].callId",
      ],
      [{ ...row, parts: holey({ type: "tool_result", callId: "c1", content: "ok" }) }, "parts[0]"],
      [{ ...row, meta: { custom: holey(1) } }, "meta.custom[0]"],
      [{ ...row, meta: { custom: new Date(0) } }, "meta.custom"],
      [{ ...row, meta: { custom: nestedArrays(40) } }, `meta.custom${"[0]".repeat(MAX_META_DEPTH - 1)}`],
    ];
    for (const [bad, field] of cases) {
      expect(isStoredMessage(bad)).toBe(false);
      expect(storedMessageSchema.safeParse(bad).success).toBe(false);
      // Read back as a store row (decoded, as PostgreSQL hands JSON over), the error names the field.
      const error = (() => {
        try {
          storedFromRow("t1", bad, {});
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).where).toMatchObject({ threadId: "t1", field });
    }
  });
});
