import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../errors/ledger-error.js";
import { canonicalJson, hashMessageContent } from "../log/canonical-json.js";
import { chainLogRows, logGenesis, logLink } from "./ledger-chain.js";
import { checkLogChain, type LogChainRow } from "./verify-chain.js";

/** A chained log of user texts, as a store would read it back. */
function chainedRows(texts: ReadonlyArray<string>, key: string | undefined): LogChainRow[] {
  const rows = texts.map((text, seq) => {
    const parts = [{ type: "text", text }];
    const message = { id: `m${seq}`, seq, role: "user", parts, hash: hashMessageContent("user", parts) };
    const tokens = { c: text.length + 1 };
    return { seq, messageId: message.id, body: JSON.stringify(message), tokens, appendedTokens: tokens };
  });
  const links = rows.map((r) => ({ seq: r.seq, body: r.body, tokens: canonicalJson(r.appendedTokens) }));
  const hashes = chainLogRows(logGenesis("t", key), links, key);
  return rows.map((r, i) => ({ ...r, chainHash: hashes[i]! }));
}

type Mutation = (rows: LogChainRow[], i: number) => LogChainRow[];

/** Ways a database's rows change behind the store's back (and none: `keep`). */
const MUTATIONS: Record<string, Mutation> = {
  keep: (rows) => rows,
  body: (rows, i) =>
    rows.map((r, j) => (j === i ? { ...r, body: r.body.replace('"text":"', '"text":"x') } : r)),
  notJson: (rows, i) => rows.map((r, j) => (j === i ? { ...r, body: `${r.body}}` } : r)),
  delete: (rows, i) => rows.filter((_, j) => j !== i),
  deleteRenumber: (rows, i) => rows.filter((_, j) => j !== i).map((r, j) => ({ ...r, seq: j })),
  insert: (rows, i) =>
    [...rows.slice(0, i), { ...rows[i]! }, ...rows.slice(i)].map((r, j) => ({ ...r, seq: j })),
  swap: (rows, i) => {
    const k = i === rows.length - 1 ? i - 1 : i + 1;
    if (k < 0) return rows;
    const out = [...rows];
    [out[i], out[k]] = [
      { ...rows[k]!, seq: rows[i]!.seq },
      { ...rows[i]!, seq: rows[k]!.seq },
    ];
    return out;
  },
  unchain: (rows, i) => rows.map((r, j) => (j >= i ? { ...r, chainHash: null } : r)),
  recount: (rows, i) => rows.map((r, j) => (j === i ? { ...r, tokens: { c: 999 } } : r)),
};

/** The seq a body says, by parsing it: what a store that parsed the rows hands `checkLogChain`. */
function parsedSeq(body: string): number | undefined {
  try {
    const seq = (JSON.parse(body) as { seq?: unknown }).seq;
    return typeof seq === "number" ? seq : undefined;
  } catch {
    return undefined;
  }
}

describe("checkLogChain", () => {
  it("finds the same with the bodies' seqs handed in as by parsing the bodies itself", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.constantFrom(...Object.keys(MUTATIONS)),
        fc.boolean(),
        (texts, pick, kind, keyed) => {
          const key = keyed ? "a-key-of-enough-length-0123456789" : undefined;
          const rows = MUTATIONS[kind]!(chainedRows(texts, key), pick % texts.length);
          const bodySeqs = rows.map((r) => parsedSeq(r.body));
          expect(checkLogChain("t", rows, key, { bodySeqs })).toEqual(checkLogChain("t", rows, key));
        },
      ),
    );
  });

  it("recomputes every head as the fold of the links over the stored rows, intact or not", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.constantFrom("keep", "body", "recount", "unchain", "swap"),
        (texts, pick, kind) => {
          const at = pick % texts.length;
          const intact = chainedRows(texts, undefined);
          const rows = MUTATIONS[kind]!(intact, at);
          const expected = [logGenesis("t")];
          for (const r of rows) {
            const tokens = canonicalJson(r.appendedTokens ?? r.tokens);
            expected.push(logLink(expected.at(-1)!, { seq: r.seq, body: r.body, tokens }));
          }
          const check = checkLogChain("t", rows);
          expect(check.heads).toEqual(expected);
          // Rows all unchained are a thread from before the ledger, not a finding; any other change is one.
          const changed = JSON.stringify(rows) !== JSON.stringify(intact);
          expect(check.findings.length > 0).toBe(changed && !(kind === "unchain" && at === 0));
        },
      ),
    );
  });

  it("refuses parsed body seqs that are not one per row", () => {
    const rows = chainedRows(["a", "b"], undefined);
    expect(() => checkLogChain("t", rows, undefined, { bodySeqs: [0] })).toThrow(ValidationError);
    expect(() => checkLogChain("t", rows, undefined, { bodySeqs: [0] })).toThrow(
      /1 parsed body seqs for 2 rows/,
    );
  });
});
