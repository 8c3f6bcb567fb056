import { describe, expect, expectTypeOf, it } from "vitest";
import type * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import type { Message } from "../log/message.js";
import type { ArtifactMeta } from "./artifact-store.js";
import type { ModelCallRecord, ModelUsage } from "./model-call-store.js";
import {
  type artifactMetaSchema,
  type cachedSummarySchema,
  type modelCallRecordSchema,
  modelUsageSchema,
  parseRow,
  type storedMessageSchema,
} from "./store-row-schemas.js";
import type { CachedSummary } from "./summary-cache.js";

/** Deeply readonly, with `undefined` removed from optional fields (how exactOptionalPropertyTypes reads them). */
type Normal<T> =
  T extends ReadonlyArray<infer U>
    ? ReadonlyArray<Normal<U>>
    : T extends object
      ? { readonly [K in keyof T]: Normal<Exclude<T[K], undefined>> }
      : T;

describe("store row schemas", () => {
  it("match the hand-written types", () => {
    expectTypeOf<Normal<z.output<typeof storedMessageSchema>>>().toExtend<Normal<Message>>();
    expectTypeOf<Normal<z.output<typeof artifactMetaSchema>>>().toEqualTypeOf<Normal<ArtifactMeta>>();
    expectTypeOf<Normal<z.output<typeof modelCallRecordSchema>>>().toEqualTypeOf<Normal<ModelCallRecord>>();
    expectTypeOf<Normal<z.output<typeof modelUsageSchema>>>().toEqualTypeOf<Normal<ModelUsage>>();
    expectTypeOf<Normal<z.output<typeof cachedSummarySchema>>>().toEqualTypeOf<Normal<CachedSummary>>();
  });

  it("parseRow decodes JSON text and names the row and field of a bad value", () => {
    expect(parseRow(modelUsageSchema, '{"inputTokens":3}', { what: "usage row" })).toEqual({
      inputTokens: 3,
    });
    const bad = () => parseRow(modelUsageSchema, '{"inputTokens":-3}', { what: "usage row", threadId: "t1" });
    expect(bad).toThrow(ValidationError);
    expect(bad).toThrow(/usage row is invalid.*thread "t1".*field inputTokens/);
    expect(() => parseRow(modelUsageSchema, "{nope", { what: "usage row" })).toThrow(/not valid JSON/);
  });
});
