import { expect, it } from "vitest";
import { NotFoundError, ValidationError, VersionConflictError } from "../../src/errors/ledger-error.js";
import { type LogStore, oneReadOf, type StoredMessage } from "../../src/stores/log-store.js";
import type { StoreOpener } from "./store-backends.js";
import { batch, COUNTER, stored } from "./store-fixtures.js";

/** Rejects with an error of class `type` and returns it for further checks. */
export async function rejection<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}

const seqs = (entries: ReadonlyArray<StoredMessage>) => entries.map((e) => e.message.seq);

async function seeded(opener: StoreOpener, n: number): Promise<{ log: LogStore; all: StoredMessage[] }> {
  const { stores } = await opener.fresh();
  const all = [
    ...batch(
      0,
      Array.from({ length: n }, (_, i) => `m${i}`),
    ),
  ];
  await stores.log.append("t1", 0, all);
  return { log: stores.log, all };
}

/** Log store cases: append, reads, conflicts, atomicity, token counts. */
export function logCases(opener: StoreOpener, title: (t: string) => string): void {
  it(title("appends batches and reads them back with their token counts, frozen"), async () => {
    const { stores } = await opener.fresh();
    const first = batch(0, ["a", "b", "c"]);
    const second = [
      stored(3, "d", "tool output \u0000 with NUL, emoji 🧪, lone \ud800 surrogate"),
      stored(4, "e"),
    ];
    await stores.log.append("t1", 0, first);
    await stores.log.append("t1", 3, second);
    const all = await stores.log.read("t1");
    expect(all).toEqual([...first, ...second]);
    expect(all[3]!.tokens[COUNTER]).toBeGreaterThan(0);
    expect(Object.isFrozen(all[0]!.message.parts[0])).toBe(true);
    expect(Object.isFrozen(all[0]!.tokens)).toBe(true);
    expect(await stores.log.length("t1")).toBe(5);
    expect(seqs(await stores.log.read("t1", 1, 3))).toEqual([1, 2]);
    expect(seqs(await stores.log.read("t1", 4))).toEqual([4]);
    expect(await stores.log.read("t1", 9)).toEqual([]);
    expect(await stores.log.length("unknown")).toBe(0);
    expect(await stores.log.read("unknown")).toEqual([]);
  });

  it(title("readRanges loads each seq once, in seq order, and seqsOf maps ids to seqs"), async () => {
    const { log } = await seeded(opener, 10);
    const ranges = [
      { from: 7, to: 20 },
      { from: 1, to: 3 },
      { from: 2, to: 4 },
      { from: 5, to: 5 },
    ];
    expect(seqs(await log.readRanges("t1", ranges))).toEqual([1, 2, 3, 7, 8, 9]);
    expect(await log.readRanges("t1", [])).toEqual([]);
    const found = await log.seqsOf("t1", ["m4", "nope", "m0"]);
    expect([...found].sort()).toEqual([
      ["m0", 0],
      ["m4", 4],
    ]);
  });

  it(
    title("a stale expectedSeq gets VersionConflictError naming the thread, and writes nothing"),
    async () => {
      const { log, all } = await seeded(opener, 3);
      const error = await rejection(log.append("t1", 2, batch(2, ["late"])), VersionConflictError);
      expect([error.expected, error.actual, error.where.threadId]).toEqual([2, 3, "t1"]);
      expect(error.message).toContain('"t1"');
      await rejection(log.append("t1", 4, batch(4, ["ahead"])), VersionConflictError);
      expect(await log.read("t1")).toEqual(all);
    },
  );

  it(title("a bad batch appends nothing and names the message and field"), async () => {
    const { log, all } = await seeded(opener, 2);
    const wrongSeq = [stored(2, "x"), stored(3, "y"), stored(5, "z")];
    const e1 = await rejection(log.append("t1", 2, wrongSeq), ValidationError);
    expect([e1.where.index, e1.where.messageId, e1.where.field]).toEqual([2, "z", "seq"]);
    const e2 = await rejection(log.append("t1", 2, [stored(2, "x"), stored(3, "m0")]), ValidationError);
    expect([e2.where.messageId, e2.where.field]).toEqual(["m0", "id"]);
    const broken = { ...stored(3, "y"), message: { ...stored(3, "y").message, role: "robot" } };
    const e3 = await rejection(
      log.append("t1", 2, [stored(2, "x"), broken as StoredMessage]),
      ValidationError,
    );
    expect([e3.where.index, e3.where.field]).toEqual([1, "role"]);
    const badTokens = { ...stored(2, "x"), tokens: { [COUNTER]: -1 } };
    const e4 = await rejection(log.append("t1", 2, [badTokens]), ValidationError);
    expect(e4.where.field).toBe(`tokens.${COUNTER}`);
    expect(await log.read("t1")).toEqual(all);
    await log.append("t1", 2, [stored(2, "x")]);
    expect(await log.length("t1")).toBe(3);
  });

  it(title("setTokenCounts merges counts; an unknown seq changes nothing"), async () => {
    const { log } = await seeded(opener, 3);
    await log.setTokenCounts("t1", [
      { seq: 0, tokens: { "bpe:o200k_base+openai": 11 } },
      { seq: 2, tokens: { [COUNTER]: 99 } },
    ]);
    const [m0, , m2] = await log.read("t1");
    expect(m0!.tokens).toEqual({ [COUNTER]: m0!.tokens[COUNTER], "bpe:o200k_base+openai": 11 });
    expect(m2!.tokens).toEqual({ [COUNTER]: 99 });
    await rejection(
      log.setTokenCounts("t1", [
        { seq: 1, tokens: { z: 1 } },
        { seq: 3, tokens: { z: 1 } },
      ]),
      NotFoundError,
    );
    expect((await log.read("t1", 1, 2))[0]!.tokens.z).toBeUndefined();
  });

  it(title("readWithChain gives what read and chainRows give, from one read"), async () => {
    const { log } = await seeded(opener, 5);
    // Counts merged since the append: the row's counts and the counts it was chained with differ.
    await log.setTokenCounts("t1", [{ seq: 1, tokens: { "bpe:o200k_base+openai": 11 } }]);
    for (const toSeq of [0, 1, 3, 5, 9]) {
      const { entries, chain } = await log.readWithChain!("t1", toSeq);
      expect(entries).toEqual(await log.read("t1", 0, toSeq));
      expect(chain).toEqual(await log.chainRows!("t1", toSeq));
      expect(entries.map((e) => e.message)).toEqual(chain.map((r) => JSON.parse(r.body)));
    }
    const { entries } = await log.readWithChain!("t1", 5);
    expect(Object.isFrozen(entries[0]!.message.parts[0])).toBe(true);
    expect(Object.isFrozen(entries[0]!.tokens)).toBe(true);
    expect(await log.readWithChain!("unknown", 3)).toEqual({ entries: [], chain: [] });
    await rejection(log.readWithChain!("t1", -1), ValidationError);
    await rejection(log.readWithChain!("", 1), ValidationError);
  });

  it(
    title("oneReadOf gives readWithChain unless a wrapper replaced read or chainRows and kept it"),
    async () => {
      const { log } = await seeded(opener, 2);
      expect(oneReadOf(log)).toBe(log.readWithChain);
      expect(oneReadOf({ ...log })).toBe(log.readWithChain);
      expect(oneReadOf({ ...log, read: async (t, from, to) => log.read(t, from, to) })).toBeUndefined();
      expect(oneReadOf({ ...log, chainRows: async (t, to) => log.chainRows!(t, to) })).toBeUndefined();
      // A wrapper that replaces readWithChain too answers for it.
      const own = async (t: string, to: number) => log.readWithChain!(t, to);
      expect(oneReadOf({ ...log, read: async (t) => log.read(t), readWithChain: own })).toBe(own);
      const { readWithChain: _, ...without } = log;
      expect(oneReadOf(without)).toBeUndefined();
    },
  );

  it(title("threads lists every thread with messages, and threads are independent"), async () => {
    const { stores } = await opener.fresh();
    await stores.log.append("b", 0, batch(0, ["x"]));
    await stores.log.append("a", 0, batch(0, ["x", "y"]));
    expect(await stores.log.threads()).toEqual(["a", "b"]);
    expect([await stores.log.length("a"), await stores.log.length("b")]).toEqual([2, 1]);
  });

  it(title("invalid arguments raise ValidationError"), async () => {
    const { stores } = await opener.fresh();
    await rejection(stores.log.append("", 0, []), ValidationError);
    await rejection(stores.log.append("t1", -1, []), ValidationError);
    await rejection(stores.log.read("t1", 1.5), ValidationError);
    await rejection(stores.log.readRanges("t1", [{ from: -2, to: 1 }]), ValidationError);
  });
}
