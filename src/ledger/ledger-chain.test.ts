import { createHash, createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { logGenesis, logLink, planGenesis, planLink } from "./ledger-chain.js";

/** A link as decision 0018 defines it: the fields fed to the hash one by one, NUL between them. */
function fieldByField(key: string | undefined, fields: ReadonlyArray<string>): string {
  const h = key === undefined ? createHash("sha256") : createHmac("sha256", key);
  fields.forEach((field, i) => {
    if (i > 0) h.update("\0");
    h.update(field);
  });
  return h.digest("hex");
}

// Any UTF-16 code units, lone surrogates included: a stored body may hold one, and its bytes must not change.
const text = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const key = fc.option(fc.string({ minLength: 1 }), { nil: undefined });

describe("ledger links", () => {
  it("hash exactly the bytes of their fields fed one by one with NUL between, keyed or not", () => {
    fc.assert(
      fc.property(key, text, fc.nat(), text, text, text, (k, previous, n, tokens, body, when) => {
        expect(logLink(previous, { seq: n, tokens, body }, k)).toBe(
          fieldByField(k, [previous, String(n), tokens, body]),
        );
        expect(planLink(previous, { version: n, kind: tokens, committedAt: when, body }, k)).toBe(
          fieldByField(k, [previous, String(n), tokens, when, body]),
        );
        expect(logGenesis(body, k)).toBe(fieldByField(k, ["context-ledger log chain v1", body]));
        expect(planGenesis(body, k)).toBe(fieldByField(k, ["context-ledger plan chain v1", body]));
      }),
      { numRuns: 300 },
    );
  });

  it("gives the links chains were written with so far (values from the field-by-field implementation)", () => {
    // Fixed values: a change of the bytes a link covers would make every stored chain fail to verify.
    expect(logGenesis("t")).toBe("60274096d03d18df46142731f7548ad9f9c84cf7f305d50ad2a8a8f2b4b52c3c");
    expect(planGenesis("t", "k")).toBe("5f7e0a767a769fc7f436b157c84e62a728d5932c4305e9c3042f22a1fcd759ee");
    expect(logLink("p", { seq: 3, tokens: '{"c":1}', body: '{"x":"\ud800é"}' }, "k")).toBe(
      "558763dfc0d792d696853215e3852049a3d70c3dba0847b685daa67acaa924ba",
    );
  });
});
