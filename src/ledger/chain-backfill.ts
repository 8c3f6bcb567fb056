import { ChainBrokenError } from "../errors/ledger-error.js";

/** A stored row as a backfill sees it: its position (seq, or plan version) and its stored chain hash. */
export interface BackfillRow {
  readonly position: number;
  readonly chainHash: string | null;
}

/** How to chain one kind of row: where the chain starts and how a link is computed. */
export interface BackfillSpec<R extends BackfillRow> {
  readonly threadId: string;
  readonly chain: "log" | "plan";
  /** The first position of the chain: seq 0, plan version 1. */
  readonly first: number;
  readonly genesis: string;
  link(previous: string, row: R): string;
}

/**
 * The hashes to store for rows written before the chain (docs/decisions/0018), and the head after them. Only the
 * legacy case the migration left is backfilled: every row from the chain's first position up to `end` (exclusive)
 * present and none chained. A row without a hash after a chained one, or a missing row, was tampered with:
 * chaining it from its current content (with the writer's key) would hide the edit, so this throws
 * `ChainBrokenError` naming the first such row, before anything is written.
 */
export function backfillChain<R extends BackfillRow>(
  spec: BackfillSpec<R>,
  rows: ReadonlyArray<R>,
  end: number,
): { readonly head: string; readonly fills: ReadonlyArray<{ readonly row: R; readonly hash: string }> } {
  const fills: Array<{ row: R; hash: string }> = [];
  let head = spec.genesis;
  let expected = spec.first;
  let chainedAt: number | undefined;
  for (const row of rows) {
    if (row.position !== expected) {
      throw new ChainBrokenError(
        spec.threadId,
        spec.chain,
        expected,
        `${spec.chain === "log" ? "the row" : "the version"} is missing (deleted)`,
      );
    }
    expected++;
    if (row.chainHash !== null) {
      chainedAt ??= row.position;
      head = row.chainHash;
      continue;
    }
    if (chainedAt !== undefined) {
      throw new ChainBrokenError(
        spec.threadId,
        spec.chain,
        row.position,
        `it has no chain hash although ${spec.chain === "log" ? "seq" : "version"} ${chainedAt} before it has one (rows are chained in order, so its hash was removed)`,
      );
    }
    head = spec.link(head, row);
    fills.push({ row, hash: head });
  }
  if (expected !== end) {
    throw new ChainBrokenError(spec.threadId, spec.chain, expected, "the row is missing (deleted)");
  }
  if (chainedAt !== undefined && fills.length > 0) {
    // Unchained rows before a chained one: the chained rows were not chained from them, so the stored chain is
    // not one this backfill can extend.
    throw new ChainBrokenError(
      spec.threadId,
      spec.chain,
      spec.first,
      `rows before ${spec.chain === "log" ? "seq" : "version"} ${chainedAt} have no chain hash although it has one`,
    );
  }
  return { head, fills };
}
