import { describe, expect, it } from "vitest";
import type { MessageMeta, Part } from "./message.js";
import { copyMeta, copyPart, isMessageInput, isMeta, isPart } from "./message-quick-check.js";
import { MAX_META_DEPTH, messageInputSchema } from "./message-schema.js";

function nestedArrays(levels: number): unknown {
  let value: unknown = "x";
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe("message quick check", () => {
  it("copies parts and metadata as the schema's output, JSON-copied, would be", () => {
    const part = { isError: undefined, content: "ok", callId: "c1", type: "tool_result" } as unknown as Part;
    expect(Object.keys(copyPart(part))).toEqual(["type", "callId", "content"]);
    const meta = { custom: { b: -0, a: [1] }, pinned: true, sourceId: undefined, "7": "x", toolName: "grep" };
    const copy = copyMeta(meta as unknown as MessageMeta) as Record<string, unknown>;
    const viaSchema = JSON.parse(
      JSON.stringify(messageInputSchema.parse({ role: "user", parts: [], meta }).meta),
    ) as Record<string, unknown>;
    expect(Object.keys(copy)).toEqual(["7", "toolName", "pinned", "custom"]);
    expect(Object.keys(copy)).toEqual(Object.keys(viaSchema));
    expect(copy).toEqual(viaSchema);
    expect(Object.is((copy.custom as { b: number }).b, 0)).toBe(true);
    expect(copy.custom).not.toBe(meta.custom);
  });

  it("leaves unusual objects to the schema, which takes some of them", () => {
    const message = (meta: unknown) => ({ role: "user", parts: [], meta });
    const leftToSchema = [
      message(new Map([["pinned", true]])),
      message(JSON.parse('{"__proto__": {"a": 1}}')),
      message({ custom: Object.assign(Object.create(null), { a: 1 }) }),
      { role: "user", parts: [new (class {})()] },
    ];
    for (const value of leftToSchema) expect(isMessageInput(value)).toBe(false);
    // The schema takes a Map or a `__proto__` key as metadata (and returns `{}` / drops the key).
    expect(messageInputSchema.safeParse(leftToSchema[0]).success).toBe(true);
    expect(messageInputSchema.safeParse(leftToSchema[1]).success).toBe(true);
    // A null-prototype message or part is as plain as JSON for these checks.
    const bare = Object.assign(Object.create(null), { role: "user", parts: [{ type: "text", text: "hi" }] });
    expect(isMessageInput(bare)).toBe(true);
  });

  it("holds metadata to the schema's depth limit and NUL rule", () => {
    // A caller's value may hold MAX_META_DEPTH - 1 levels of arrays or objects.
    for (const [levels, ok] of [
      [MAX_META_DEPTH - 1, true],
      [MAX_META_DEPTH, false],
    ] as const) {
      const value = { role: "user", parts: [], meta: { deep: nestedArrays(levels) } };
      expect(messageInputSchema.safeParse(value).success).toBe(ok);
      expect(isMessageInput(value)).toBe(ok);
    }
    expect(isMeta({ note: "a\u0000b" }, true)).toBe(false);
    expect(isMeta({ note: "a\u0000b" }, false)).toBe(true); // what a store reads back: no NUL rule
    expect(isMeta({ "k\u0000": 1 }, true)).toBe(false);
    expect(isMeta({ sourceId: "a\u0000" }, true)).toBe(false);
    // Message text may hold NUL; ids may not.
    expect(isPart({ type: "text", text: "a\u0000b" })).toBe(true);
    expect(isPart({ type: "tool_call", callId: "c\u0000", name: "n", args: "" })).toBe(false);
    expect(isPart({ type: "tool_call", callId: "c".repeat(513), name: "n", args: "" })).toBe(false);
  });
});
