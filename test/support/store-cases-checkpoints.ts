import { expect, it } from "vitest";
import { ValidationError } from "../../src/errors/ledger-error.js";
import {
  CHECKPOINTS_KEPT,
  type CheckpointStore,
  type ThreadCheckpoint,
} from "../../src/stores/checkpoint-store.js";
import { POSTGRES_MIGRATIONS } from "../../src/stores/postgres/index.js";
import { SQLITE_MIGRATIONS } from "../../src/stores/sqlite/index.js";
import type { Stores } from "../../src/stores/stores.js";
import type { StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { createAtSchema, rawSql } from "./store-cases-plan.js";
import type { StoreTarget } from "./store-target.js";

/** A (plan version, log length) pair: what names a checkpoint within its thread. */
type Key = readonly [planVersion: number, logLength: number];

/** A checkpoint whose body names its key, so a wrong row read back shows in the diff (no tail). */
function checkpoint(threadId: string, [planVersion, logLength]: Key, body?: string): ThreadCheckpoint {
  return {
    threadId,
    planVersion,
    logLength,
    format: "cl-checkpoint/1",
    body: body ?? `${threadId} v${planVersion} n${logLength}`,
  };
}

/** The tail `withTail` gives a checkpoint: its key again, so a tail read from the wrong row shows. */
const tailOf = (cp: ThreadCheckpoint): string => `tail of ${cp.threadId} v${cp.planVersion} n${cp.logLength}`;

/** The checkpoint with a tail naming its key. */
const withTail = (cp: ThreadCheckpoint): ThreadCheckpoint => ({ ...cp, tail: tailOf(cp) });

/** 2 MiB of text that JSON and SQL text columns find awkward, repeated. */
function bigBody(): string {
  const block = `block «quotes" \\ back\u0000slash» \ud800 🧪 ${"x".repeat(100)}\n`;
  return block.repeat(Math.ceil((2 * 1024 * 1024) / block.length));
}

/** Bodies every backend must hand back exactly (with a thread id for each, some awkward too). */
function awkwardCheckpoints(): ThreadCheckpoint[] {
  const bodies = [
    "",
    "NUL \u0000 inside, \u0000\u0000 twice, and at the end \u0000",
    "lone \ud800 high and \udfff low surrogates, reversed \udc00\ud800",
    'emoji 🧪👩‍👩‍👧 and «quotes" \\ back\\slash» \n\t\r {"json": [1]} \'sql\' ?',
    bigBody(),
  ];
  // Each awkward text is a body once and a tail once (the 2 MB one with a 2 MB body beside it).
  return bodies.map((body, i) => ({
    ...checkpoint(`thread ✓ «${i}»`, [1 + i, 10 * (i + 1)], body),
    tail: bodies[(i + 1) % bodies.length]!,
  }));
}

/** The checkpoint store of a set of stores: every backend of the suite provides one. */
function checkpointsOf(stores: Stores): CheckpointStore {
  expect(stores.checkpoints).toBeDefined();
  return stores.checkpoints!;
}

/** Which of `keys` the thread holds, as `latest` sees them. */
async function held(store: CheckpointStore, threadId: string, keys: ReadonlyArray<Key>): Promise<Key[]> {
  const out: Key[] = [];
  for (const key of keys) if ((await store.latest(threadId, ...key))?.logLength === key[1]) out.push(key);
  return out;
}

/** Keys newest first: by plan version, then log length (the order retention keeps). */
const newestFirst = (keys: ReadonlyArray<Key>): Key[] => [...keys].sort((a, b) => b[0] - a[0] || b[1] - a[1]);

/** Rows a durable target's table holds for a thread: what `latest` cannot show (rows hidden or left over). */
async function rowCount(target: StoreTarget, threadId: string): Promise<number> {
  const rows = await rawSql(target, "SELECT count(*) AS n FROM {checkpoints} WHERE thread_id = ?", threadId);
  return Number(rows[0]?.n);
}

/**
 * Checks that every checkpoint reads back exactly (texts compared without printing megabytes) and frozen:
 * `latest` without the tail, `tail` with it ("" when put without one).
 */
async function expectExact(store: CheckpointStore, written: ReadonlyArray<ThreadCheckpoint>): Promise<void> {
  for (const cp of written) {
    const back = await store.latest(cp.threadId, cp.planVersion, cp.logLength);
    expect(back).toBeDefined();
    expect(back).not.toHaveProperty("tail");
    const tail = await store.tail(cp.threadId, cp.planVersion, cp.logLength);
    const want = cp.tail ?? "";
    expect(tail?.length, `tail length of ${JSON.stringify(cp.threadId)}`).toBe(want.length);
    expect(tail === want, `tail of ${JSON.stringify(cp.threadId)}`).toBe(true);
    const { body, ...rest } = back!;
    expect(rest).toEqual({
      threadId: cp.threadId,
      planVersion: cp.planVersion,
      logLength: cp.logLength,
      format: cp.format,
    });
    expect(body.length, `body length of ${JSON.stringify(cp.threadId)}`).toBe(cp.body.length);
    expect(body === cp.body, `body of ${JSON.stringify(cp.threadId)}`).toBe(true);
    expect(Object.isFrozen(back)).toBe(true);
  }
}

/** Checkpoint store cases: exact round trips, the `latest` lookup, first write wins, retention, validation. */
export function checkpointCases(opener: StoreOpener, title: (t: string) => string): void {
  const durable = opener.backend.durable;

  it(
    title("bodies and tails with NUL, lone surrogates, emoji and 2 MB read back exactly and frozen"),
    async () => {
      const { stores } = await opener.fresh();
      const store = checkpointsOf(stores);
      const written = awkwardCheckpoints();
      for (const cp of written) await store.put(cp);
      // Without a tail, and with an empty one: both read back as "".
      const plain = [checkpoint("t3", [1, 1]), { ...checkpoint("t3", [1, 2]), tail: "" }];
      for (const cp of plain) await store.put(cp);
      await expectExact(store, [...written, ...plain]);
      // The store keeps its own copy of the five fields: extra fields are dropped, later edits change nothing.
      const mine = { ...checkpoint("t1", [2, 3]), extra: "dropped" };
      await store.put(mine);
      mine.body = "changed after the put";
      expect(await store.latest("t1", 2, 3)).toEqual(checkpoint("t1", [2, 3]));
      // Every safe integer is a valid version and length.
      const edge = checkpoint("t1", [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
      await store.put(edge);
      expect(await store.latest("t1", edge.planVersion, edge.logLength)).toEqual(edge);
    },
  );

  it(
    title("latest: the greatest log length ≤ the maximum, of exactly that plan version and thread"),
    async () => {
      const { stores } = await opener.fresh();
      const store = checkpointsOf(stores);
      for (const cp of [
        checkpoint("t1", [1, 10]),
        checkpoint("t1", [1, 20]),
        checkpoint("t1", [2, 15]),
        checkpoint("t2", [1, 18]),
      ]) {
        await store.put(cp);
      }
      const lengthOf = async (threadId: string, planVersion: number, max: number) =>
        (await store.latest(threadId, planVersion, max))?.logLength;
      expect(await lengthOf("t1", 1, 9)).toBeUndefined();
      expect(await lengthOf("t1", 1, 10)).toBe(10);
      expect(await lengthOf("t1", 1, 19)).toBe(10);
      expect(await lengthOf("t1", 1, 20)).toBe(20);
      expect(await lengthOf("t1", 1, Number.MAX_SAFE_INTEGER)).toBe(20);
      // Version 2 holds length 15 only: the longer version-1 checkpoints are never an answer for it.
      expect(await lengthOf("t1", 2, 14)).toBeUndefined();
      expect(await lengthOf("t1", 2, 100)).toBe(15);
      expect(await lengthOf("t1", 3, 100)).toBeUndefined();
      // t2's length 18 would be the best answer for t1 version 1 below 20, but belongs to another thread.
      expect(await lengthOf("t2", 1, 17)).toBeUndefined();
      expect(await store.latest("t2", 1, 19)).toEqual(checkpoint("t2", [1, 18]));
      expect(await store.latest("unknown", 1, 100)).toBeUndefined();
    },
  );

  it(title("a second put of the same thread, version and length is ignored: the first stays"), async () => {
    const { stores, target } = await opener.fresh();
    const store = checkpointsOf(stores);
    const first = checkpoint("t1", [3, 7], "first");
    await expect(store.put({ ...first, tail: "first tail" })).resolves.toBe(true);
    const second = { ...first, format: "cl-checkpoint/2", body: "second", tail: "second tail" };
    await expect(store.put(second)).resolves.toBe(false);
    expect(await store.latest("t1", 3, 7)).toEqual(first);
    expect(await store.tail("t1", 3, 7)).toBe("first tail");
    if (durable) expect(await rowCount(target, "t1")).toBe(1);
  });

  it(
    title("putExtending joins the base's stored tail and the new text exactly, awkward text and 2 MB too"),
    async () => {
      const { stores } = await opener.fresh();
      const store = checkpointsOf(stores);
      const texts = awkwardCheckpoints().map((cp) => cp.body);
      // Pairs that meet at awkward places: a lone high surrogate, then a lone low one; NUL; the empty tail.
      const pairs: Array<[string, string]> = [
        [texts[4]!, texts[2]!],
        ["ends high \ud800", "\udc00 starts low"],
        ["", texts[1]!],
        [texts[3]!, ""],
        ["\u0000", "\u0000"],
      ];
      for (const [i, [before, after]] of pairs.entries()) {
        const threadId = `join «${i}» ✓`;
        const base = { ...checkpoint(threadId, [1, 10]), tail: before };
        expect(await store.put(base)).toBe(true);
        const next = { ...checkpoint(threadId, [2, 12]), tail: after };
        expect(await store.putExtending(next, { planVersion: 1, logLength: 10 })).toBe("stored");
        await expectExact(store, [base, { ...next, tail: before + after }]);
      }
    },
  );

  it(
    title("putExtending: a stored key is left alone, a missing base stores nothing, retention applies"),
    async () => {
      const { stores, target } = await opener.fresh();
      const store = checkpointsOf(stores);
      await store.put({ ...checkpoint("t1", [1, 10]), tail: "base" });
      await store.put({ ...checkpoint("t1", [2, 20]), tail: "first" });
      // The key is there: nothing changes, whatever the base.
      const again = { ...checkpoint("t1", [2, 20], "other body"), tail: " more" };
      expect(await store.putExtending(again, { planVersion: 1, logLength: 10 })).toBe("exists");
      expect(await store.putExtending(again, { planVersion: 9, logLength: 9 })).toBe("exists");
      expect(await store.latest("t1", 2, 20)).toEqual(checkpoint("t1", [2, 20]));
      expect(await store.tail("t1", 2, 20)).toBe("first");
      // No such base (in this thread): nothing is stored.
      const orphan = { ...checkpoint("t1", [3, 30]), tail: " more" };
      expect(await store.putExtending(orphan, { planVersion: 1, logLength: 11 })).toBe("missing");
      await store.put({ ...checkpoint("t2", [5, 50]), tail: "other thread" });
      expect(await store.putExtending(orphan, { planVersion: 5, logLength: 50 })).toBe("missing");
      expect(await store.latest("t1", 3, 30)).toBeUndefined();
      // A chain of continuations, each on the one before, trimmed to the newest like any put.
      let previous: Key = [2, 20];
      let text = "first";
      for (let v = 3; v < 3 + CHECKPOINTS_KEPT + 1; v++) {
        const cp = { ...checkpoint("t1", [v, 10 * v]), tail: ` +${v}` };
        const [planVersion, logLength] = previous;
        expect(await store.putExtending(cp, { planVersion, logLength })).toBe("stored");
        text += ` +${v}`;
        expect(await store.tail("t1", v, 10 * v)).toBe(text);
        previous = [v, 10 * v];
      }
      expect(
        (
          await held(store, "t1", [
            [1, 10],
            [2, 20],
          ])
        ).length,
      ).toBe(0);
      if (durable) expect(await rowCount(target, "t1")).toBe(CHECKPOINTS_KEPT);
      // The base that was trimmed cannot be continued any more.
      expect(
        await store.putExtending({ ...checkpoint("t1", [99, 990]) }, { planVersion: 2, logLength: 20 }),
      ).toBe("missing");
    },
  );

  it(title("putExtending validates the checkpoint like put, and the base's key"), async () => {
    const { stores } = await opener.fresh();
    const store = checkpointsOf(stores);
    await store.put(checkpoint("t1", [1, 10]));
    const base = { planVersion: 1, logLength: 10 };
    const bad: Array<[ThreadCheckpoint, { planVersion: number; logLength: number }, string]> = [
      [{ ...checkpoint("t1", [2, 20]), body: 7 as unknown as string }, base, "body"],
      [{ ...checkpoint("t1", [0, 20]) }, base, "planVersion"],
      [checkpoint("t1", [2, 20]), { planVersion: 0, logLength: 10 }, "base.planVersion"],
      [checkpoint("t1", [2, 20]), { planVersion: 1, logLength: 1.5 }, "base.logLength"],
    ];
    for (const [cp, key, field] of bad) {
      const error = await rejection(store.putExtending(cp, key), ValidationError);
      expect(error.where.field).toBe(field);
    }
    expect(await store.latest("t1", 2, 20)).toBeUndefined();
  });

  it(
    title(
      `each thread keeps its newest ${CHECKPOINTS_KEPT} (by plan version, then log length), others untouched`,
    ),
    async () => {
      const { stores, target } = await opener.fresh();
      const store = checkpointsOf(stores);
      const other: Key[] = Array.from({ length: CHECKPOINTS_KEPT }, (_, i) => [1, i + 1]);
      for (const key of other) await store.put(checkpoint("t2", key));
      // Out of order on purpose: neither put order nor log length alone gives the newest.
      const keys: Key[] = [
        [2, 5],
        [1, 50],
        [3, 1],
        [2, 9],
        [1, 60],
        [4, 2],
        [2, 70],
        [3, 4],
      ];
      expect(keys.length).toBeGreaterThan(CHECKPOINTS_KEPT + 1);
      for (const key of keys) await store.put(withTail(checkpoint("t1", key)));
      const kept = newestFirst(keys).slice(0, CHECKPOINTS_KEPT);
      expect(newestFirst(await held(store, "t1", keys))).toEqual(kept);
      // A tail is read by its exact key, and goes with its checkpoint.
      for (const key of keys) {
        const stored = kept.some((k) => k[0] === key[0] && k[1] === key[1]);
        const tail = await store.tail("t1", ...key);
        expect(tail, `tail of ${key}`).toBe(stored ? tailOf(checkpoint("t1", key)) : undefined);
      }
      expect(await store.tail("t1", kept[0]![0], kept[0]![1] + 1)).toBeUndefined();
      expect(await store.tail("t2", ...kept[0]!)).toBeUndefined();
      // An older checkpoint put now is written and trimmed in the same transaction.
      await store.put(checkpoint("t1", [1, 99]));
      expect(await store.latest("t1", 1, 99)).toBeUndefined();
      expect(newestFirst(await held(store, "t1", keys))).toEqual(kept);
      expect(await held(store, "t2", other)).toEqual(other);
      if (!durable) return;
      expect(await rowCount(target, "t1")).toBe(CHECKPOINTS_KEPT);
      expect(await rowCount(target, "t2")).toBe(CHECKPOINTS_KEPT);
    },
  );

  it(title(`concurrent puts to one thread still leave exactly ${CHECKPOINTS_KEPT}`), async () => {
    const { stores, target } = await opener.fresh();
    const handles = durable ? [stores, await opener.at(target), await opener.at(target)] : [stores];
    // Each key newer than the ones before: trims racing unserialized would each miss the other's new row.
    const keys: Key[] = Array.from({ length: 24 }, (_, i) => [1 + Math.floor(i / 8), i + 1]);
    await Promise.all(
      keys.map((key, i) => checkpointsOf(handles[i % handles.length]!).put(checkpoint("t1", key))),
    );
    const kept = newestFirst(keys).slice(0, CHECKPOINTS_KEPT);
    expect(newestFirst(await held(checkpointsOf(stores), "t1", keys))).toEqual(kept);
    if (durable) expect(await rowCount(target, "t1")).toBe(CHECKPOINTS_KEPT);
  });

  it(
    title("concurrent continuations of one base each store the base's tail and their own, whole"),
    async () => {
      const { stores, target } = await opener.fresh();
      const handles = durable ? [stores, await opener.at(target), await opener.at(target)] : [stores];
      // A base a few hundred kilobytes long, so a join cut short or interleaved would show.
      const baseTail = `base ${"«tail» ".repeat(40_000)}`;
      await checkpointsOf(stores).put({ ...checkpoint("t1", [1, 10]), tail: baseTail });
      // Continuations of the base (some racing for the same key) beside plain puts of other keys: at most
      // CHECKPOINTS_KEPT - 1 of them newer than the base, so the base is never trimmed while they run.
      const keys: Key[] = [
        [1, 11],
        [1, 12],
        [1, 11],
      ];
      const outcomes = await Promise.all(
        keys.map((key, i) =>
          checkpointsOf(handles[i % handles.length]!).putExtending(
            { ...checkpoint("t1", key), tail: ` +${i}` },
            { planVersion: 1, logLength: 10 },
          ),
        ),
      );
      expect([...outcomes].sort()).toEqual(["exists", "stored", "stored"]);
      const racedFor11 = outcomes[0] === "stored" ? " +0" : " +2";
      expect((await checkpointsOf(stores).tail("t1", 1, 11)) === `${baseTail}${racedFor11}`).toBe(true);
      expect((await checkpointsOf(stores).tail("t1", 1, 12)) === `${baseTail} +1`).toBe(true);
      if (durable) expect(await rowCount(target, "t1")).toBe(CHECKPOINTS_KEPT);
    },
  );

  it(
    title("every bad field of a put, latest or tail throws ValidationError naming it; nothing is written"),
    async () => {
      const { stores, target } = await opener.fresh();
      const store = checkpointsOf(stores);
      const originals: Key[] = Array.from({ length: CHECKPOINTS_KEPT }, (_, i) => [1, i + 1]);
      for (const key of originals) await store.put(checkpoint("t1", key));
      // Every bad put names the newest key: written, it would also push the oldest original out.
      const good = checkpoint("t1", [2, 9]);
      const { format: _format, ...withoutFormat } = good;
      const bad: Array<[unknown, string]> = [
        [undefined, "threadId"],
        [{ ...good, threadId: "" }, "threadId"],
        [{ ...good, threadId: 7 }, "threadId"],
        [{ ...good, planVersion: 0 }, "planVersion"],
        [{ ...good, planVersion: -2 }, "planVersion"],
        [{ ...good, planVersion: 1.5 }, "planVersion"],
        [{ ...good, planVersion: Number.NaN }, "planVersion"],
        [{ ...good, planVersion: 2 ** 53 }, "planVersion"],
        [{ ...good, planVersion: "2" }, "planVersion"],
        [{ ...good, logLength: 0 }, "logLength"],
        [{ ...good, logLength: 9.5 }, "logLength"],
        [{ ...good, logLength: Number.POSITIVE_INFINITY }, "logLength"],
        [{ ...good, logLength: undefined }, "logLength"],
        [{ ...good, format: "" }, "format"],
        [{ ...good, format: "f".repeat(65) }, "format"],
        [{ ...good, format: 1 }, "format"],
        [withoutFormat, "format"],
        [{ ...good, body: 42 }, "body"],
        [{ ...good, body: null }, "body"],
        [{ ...good, body: undefined }, "body"],
        [{ ...good, body: ["text"] }, "body"],
        [{ ...good, tail: 42 }, "tail"],
        [{ ...good, tail: null }, "tail"],
        [{ ...good, tail: { text: "x" } }, "tail"],
      ];
      for (const [input, field] of bad) {
        const error = await rejection(store.put(input as ThreadCheckpoint), ValidationError);
        expect(error.where.field, JSON.stringify(input)).toBe(field);
        if (field !== "threadId") expect(error.where.threadId).toBe("t1");
      }
      const badLatest: Array<[[unknown, unknown, unknown], string]> = [
        [["", 1, 1], "threadId"],
        [[5, 1, 1], "threadId"],
        [["t1", 0, 1], "planVersion"],
        [["t1", 1.5, 1], "planVersion"],
        [["t1", "1", 1], "planVersion"],
        [["t1", 1, 0], "maxLogLength"],
        [["t1", 1, -3], "maxLogLength"],
        [["t1", 1, Number.NaN], "maxLogLength"],
      ];
      for (const [args, field] of badLatest) {
        const error = await rejection(store.latest(...(args as [string, number, number])), ValidationError);
        expect(error.where.field, JSON.stringify(args)).toBe(field);
        // `tail` checks the same arguments, its third being an exact log length.
        const tailError = await rejection(store.tail(...(args as [string, number, number])), ValidationError);
        expect(tailError.where.field, JSON.stringify(args)).toBe(field.replace("maxLogLength", "logLength"));
      }
      expect(await held(store, "t1", [...originals, [2, 9]])).toEqual(originals);
      if (durable) expect(await rowCount(target, "t1")).toBe(CHECKPOINTS_KEPT);
      // The limits themselves are fine: a 64-character format is accepted.
      const longest = { ...good, format: "f".repeat(64) };
      await store.put(longest);
      expect(await store.latest("t1", 2, 9)).toEqual(longest);
    },
  );

  it.runIf(durable)(title("checkpoints survive closing and reopening, trimmed ones stay gone"), async () => {
    const { stores, target } = await opener.fresh();
    const written = awkwardCheckpoints();
    for (const cp of written) await checkpointsOf(stores).put(cp);
    const keys: Key[] = Array.from({ length: CHECKPOINTS_KEPT + 2 }, (_, i) => [1, i + 1]);
    for (const key of keys) await checkpointsOf(stores).put(checkpoint("t1", key));
    await stores.close();
    const again = checkpointsOf(await opener.at(target));
    await expectExact(again, written);
    expect(await held(again, "t1", keys)).toEqual(keys.slice(-CHECKPOINTS_KEPT));
  });

  it.runIf(durable)(title("a corrupt row is reported as ValidationError naming the checkpoint"), async () => {
    const { stores, target } = await opener.fresh();
    const store = checkpointsOf(stores);
    await store.put(checkpoint("t1", [1, 5]));
    await rawSql(target, "UPDATE {checkpoints} SET body = ? WHERE thread_id = ?", "{not json", "t1");
    const error = await rejection(store.latest("t1", 1, 5), ValidationError);
    expect(error.message).toMatch(/checkpoint \(plan version 1, log length 5\).*not valid JSON/);
    expect(error.where.threadId).toBe("t1");
    await rawSql(
      target,
      "UPDATE {checkpoints} SET body = ?, format = ? WHERE thread_id = ?",
      '"ok"',
      "",
      "t1",
    );
    const format = await rejection(store.latest("t1", 1, 5), ValidationError);
    expect(format.where).toMatchObject({ threadId: "t1", field: "format" });
    await rawSql(target, "UPDATE {checkpoints} SET tail = ? WHERE thread_id = ?", "[1]", "t1");
    const tail = await rejection(store.tail("t1", 1, 5), ValidationError);
    expect(tail.message).toMatch(/tail of checkpoint \(plan version 1, log length 5\) is invalid/);
    expect(tail.where.threadId).toBe("t1");
  });

  it.runIf(durable)(
    title("a database at schema 2 is upgraded to the newest and holds checkpoints"),
    async () => {
      const target = opener.backend.newTarget();
      await createAtSchema(target, 2);
      const store = checkpointsOf(await opener.at(target));
      await store.put(withTail(checkpoint("t1", [1, 1])));
      expect(await store.latest("t1", 1, 1)).toEqual(checkpoint("t1", [1, 1]));
      expect(await store.tail("t1", 1, 1)).toBe(tailOf(checkpoint("t1", [1, 1])));
      const migrations = target.kind === "postgres" ? POSTGRES_MIGRATIONS : SQLITE_MIGRATIONS;
      expect(migrations.map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      const rows = await rawSql(target, "SELECT version FROM {schema_migrations} ORDER BY version");
      expect(rows.map((row) => Number(row.version))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    },
  );

  it.runIf(durable)(
    title("a checkpoint written at schema 3 reads back at 4 with an empty tail"),
    async () => {
      const target = opener.backend.newTarget();
      await createAtSchema(target, 3);
      await rawSql(
        target,
        "INSERT INTO {checkpoints} (thread_id, plan_version, log_length, format, body) VALUES (?, ?, ?, ?, ?)",
        "t1",
        2,
        9,
        "cl-checkpoint/1",
        JSON.stringify("old body"),
      );
      const store = checkpointsOf(await opener.at(target));
      expect(await store.latest("t1", 2, 9)).toEqual(checkpoint("t1", [2, 9], "old body"));
      expect(await store.tail("t1", 2, 9)).toBe("");
    },
  );
}
