import { expect, it } from "vitest";
import { ValidationError } from "../../src/errors/ledger-error.js";
import { hashMessageContent } from "../../src/log/canonical-json.js";
import { deepFreeze } from "../../src/log/deep-freeze.js";
import type { Message, Part, Role } from "../../src/log/message.js";
import type { LogStore, StoredMessage } from "../../src/stores/log-store.js";
import type { StoreBackend, StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { createAtSchema, rawSql } from "./store-cases-plan.js";
import { COUNTER } from "./store-fixtures.js";
import type { StoreTarget } from "./store-target.js";

/** A stored message of any role with the given parts. */
function message(seq: number, id: string, parts: ReadonlyArray<Part>, role: Role = "user"): StoredMessage {
  const m: Message = { id, seq, role, parts, meta: {}, hash: hashMessageContent(role, parts) };
  return deepFreeze({ message: m, tokens: { [COUNTER]: 10 } });
}

const say = (seq: number, id: string, text: string) => message(seq, id, [{ type: "text", text }]);

/** A small corpus whose ranking every backend agrees on (similar lengths, clearly different term counts). */
const CORPUS = [
  "the parser failed with a parser error inside the parser module",
  "one parser error was seen while starting up the service today",
  "nothing relevant is written in this message about anything else",
  "a single parser mention and nothing more was written in here",
  "the build finished and all of the tests passed without trouble",
  // Fillers: with them the searched words are rare enough to weigh in BM25 (a word in most messages hardly counts).
  "we talked about lunch plans and the weather for the weekend",
  "the deployment went out on friday afternoon as it was planned",
  "a reviewer asked for two small changes to the documentation",
  "logs were rotated and the disk has plenty of free space now",
  "the team agreed to meet again next week at the same time",
];

async function corpus(opener: StoreOpener): Promise<LogStore> {
  const { stores } = await opener.fresh();
  await stores.log.append(
    "t1",
    0,
    CORPUS.map((text, i) => say(i, `m${i}`, text)),
  );
  return stores.log;
}

const ids = (hits: ReadonlyArray<{ readonly messageId: string }>) => hits.map((h) => h.messageId);

/** The thread's search progress mark as stored (0 without a row). */
async function mark(target: StoreTarget, threadId: string): Promise<number> {
  const [row] = await rawSql(
    target,
    "SELECT indexed_upto FROM {search_progress} WHERE thread_id = ?",
    threadId,
  );
  return Number(row?.indexed_upto ?? 0);
}

/** Makes the database note every seq the search index receives, in table `index_log`. */
async function logIndexing(target: StoreTarget): Promise<void> {
  await rawSql(target, "CREATE TABLE {index_log} (seq integer NOT NULL)");
  if (target.kind === "sqlite") {
    await rawSql(
      target,
      `CREATE TRIGGER index_log AFTER INSERT ON message_search_docs
       BEGIN INSERT INTO index_log VALUES (NEW.seq); END`,
    );
    return;
  }
  await rawSql(
    target,
    `CREATE FUNCTION {log_index}() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN INSERT INTO {index_log} VALUES (NEW.seq); RETURN NEW; END $$`,
  );
  await rawSql(
    target,
    "CREATE TRIGGER index_log AFTER UPDATE OF search ON {messages} FOR EACH ROW EXECUTE FUNCTION {log_index}()",
  );
}

/** `n` messages from `from` on, each with its own word and a shared one. */
const numbered = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => say(from + i, `n${from + i}`, `shared word${from + i}`));

/** `LogStore.search` cases: ranking, limit, seqs, threads, what is indexed, staying in step with appends. */
export function searchCases(backend: StoreBackend, opener: StoreOpener, title: (t: string) => string): void {
  it(title("search ranks the messages holding any of the words best first, within the limit"), async () => {
    const log = await corpus(opener);
    const hits = await log.search!("t1", "parser error");
    expect(ids(hits)).toEqual(["m0", "m1", "m3"]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect(hits[1]!.score).toBeGreaterThan(hits[2]!.score);
    expect(hits.map((h) => h.seq)).toEqual([0, 1, 3]);
    expect(Object.isFrozen(hits) && Object.isFrozen(hits[0])).toBe(true);
    expect(ids(await log.search!("t1", "parser error", { limit: 2 }))).toEqual(["m0", "m1"]);
    expect(ids(await log.search!("t1", "tests"))).toEqual(["m4"]);
    expect(await log.search!("t1", "absent words")).toEqual([]);
  });

  it(title("search looks only at the seqs it is given"), async () => {
    const log = await corpus(opener);
    // m1 and m3 hold the word once in as many words: equal matches, the later first.
    expect(ids(await log.search!("t1", "parser", { seqs: [1, 3, 4] }))).toEqual(["m3", "m1"]);
    expect(ids(await log.search!("t1", "parser", { seqs: [3, 99] }))).toEqual(["m3"]);
    expect(await log.search!("t1", "parser", { seqs: [] })).toEqual([]);
  });

  it(title("search stays within its thread; equal matches come later message first"), async () => {
    const { stores } = await opener.fresh();
    await stores.log.append("a", 0, [say(0, "a0", "shared words here"), say(1, "a1", "other text")]);
    await stores.log.append("b", 0, [say(0, "b0", "shared words here"), say(1, "b1", "shared words here")]);
    expect(ids(await stores.log.search!("a", "shared"))).toEqual(["a0"]);
    expect(ids(await stores.log.search!("b", "shared"))).toEqual(["b1", "b0"]);
    expect(await stores.log.search!("unknown", "shared")).toEqual([]);
  });

  it(title("search finds what is appended later, in every batch"), async () => {
    const { stores, target } = await opener.fresh();
    await stores.log.append("t1", 0, [say(0, "m0", "first batch mentions kubernetes")]);
    expect(ids(await stores.log.search!("t1", "kubernetes"))).toEqual(["m0"]);
    expect(await stores.log.search!("t1", "terraform")).toEqual([]);
    await stores.log.append("t1", 1, [say(1, "m1", "second batch mentions terraform"), say(2, "m2", "none")]);
    expect(ids(await stores.log.search!("t1", "terraform kubernetes"))).toHaveLength(2);
    expect(ids(await stores.log.search!("t1", "terraform"))).toEqual(["m1"]);
    if (backend.durable) {
      // Another handle on the same database reads the same index.
      const reopened = await opener.at(target);
      expect(ids(await reopened.log.search!("t1", "terraform"))).toEqual(["m1"]);
    }
  });

  it(
    title("search indexes text, tool-call names and arguments and tool results, case and accents folded"),
    async () => {
      const { stores } = await opener.fresh();
      await stores.log.append("t1", 0, [
        message(
          0,
          "call",
          [{ type: "tool_call", callId: "c1", name: "read_file", args: '{"path":"src/Config.ts"}' }],
          "assistant",
        ),
        message(
          1,
          "result",
          [{ type: "tool_result", callId: "c1", content: "export const TIMEOUT_MS = 30_000;" }],
          "tool",
        ),
        message(2, "thought", [{ type: "reasoning", text: "hidden reasoning about zebras" }], "assistant"),
        say(3, "accent", "Le Café était fermé"),
      ]);
      const find = async (query: string) => ids(await stores.log.search!("t1", query));
      expect(await find("read_file")).toEqual(["call"]);
      expect(await find("config")).toEqual(["call"]);
      expect(await find("timeout")).toEqual(["result"]);
      expect(await find("zebras")).toEqual([]);
      expect(await find("CAFE")).toEqual(["accent"]);
      expect(await find("ferme")).toEqual(["accent"]);
      expect(await find("!!! ...")).toEqual([]);
    },
  );

  it(title("search refuses an empty query and a limit out of range"), async () => {
    const log = await corpus(opener);
    for (const query of ["", "   \n\t"]) {
      const error = await rejection(log.search!("t1", query), ValidationError);
      expect(error.where.field).toBe("query");
    }
    for (const limit of [0, 1.5, 1_001]) {
      const error = await rejection(log.search!("t1", "parser", { limit }), ValidationError);
      expect(error.where.field).toBe("limit");
    }
    await rejection(log.search!("t1", "parser", { seqs: [-1] }), ValidationError);
    await rejection(log.search!("", "parser"), ValidationError);
  });

  it(
    title("append leaves the search progress where it was; search and indexForSearch bring it up"),
    async () => {
      const { stores, target } = await opener.fresh();
      const log = stores.log;
      await log.append("t1", 0, numbered(0, 3));
      if (backend.durable) expect(await mark(target, "t1")).toBe(0);
      expect(ids(await log.search!("t1", "word2"))).toEqual(["n2"]);
      if (backend.durable) expect(await mark(target, "t1")).toBe(3);
      await log.append("t1", 3, numbered(3, 2));
      if (backend.durable) expect(await mark(target, "t1")).toBe(3);
      expect(ids(await log.search!("t1", "word4 word0"))).toHaveLength(2);
      expect(ids(await log.search!("t1", "shared", { limit: 10 }))).toHaveLength(5);
      await log.append("t1", 5, numbered(5, 600));
      await log.indexForSearch!("t1");
      if (backend.durable) expect(await mark(target, "t1")).toBe(605);
      expect(ids(await log.search!("t1", "word604"))).toEqual(["n604"]);
      await log.indexForSearch!("unknown");
      await rejection(log.indexForSearch!(""), ValidationError);
    },
  );

  if (backend.durable) {
    it(title("concurrent searches and an append index each seq once"), async () => {
      const { stores, target } = await opener.fresh();
      await logIndexing(target);
      // The first search creates the thread's progress row; the racers below contend on it.
      await stores.log.append("t1", 0, numbered(0, 10));
      expect(ids(await stores.log.search!("t1", "word9"))).toEqual(["n9"]);
      await stores.log.append("t1", 10, numbered(10, 1_190));
      const [a, b, c] = [await opener.at(target), await opener.at(target), await opener.at(target)];
      const searched = await Promise.all([
        a.log.search!("t1", "word1199"),
        b.log.search!("t1", "word0"),
        c.log.append("t1", 1_200, numbered(1_200, 300)),
        a.log.indexForSearch!("t1"),
      ]);
      expect([ids(searched[0]), ids(searched[1])]).toEqual([["n1199"], ["n0"]]);
      expect(ids(await b.log.search!("t1", "word1499"))).toEqual(["n1499"]);
      const [row] = await rawSql(target, "SELECT count(*) AS n, count(DISTINCT seq) AS d FROM {index_log}");
      expect([Number(row?.n), Number(row?.d)]).toEqual([1_500, 1_500]);
      expect(await mark(target, "t1")).toBe(1_500);
    });

    it(
      title("messages stored before the search index are indexed by the first search after migrating"),
      async () => {
        const target = backend.newTarget();
        await createAtSchema(target, 4);
        const rows: Array<[string, StoredMessage]> = [
          ["t1", say(0, "old", "stored before the index existed")],
          ["t1", say(1, "x", "…")],
          ["t2", say(0, "other", "indexed in another thread")],
        ];
        for (const [threadId, { message, tokens }] of rows) {
          const values = [threadId, message.seq, message.id, JSON.stringify(message), JSON.stringify(tokens)];
          await rawSql(
            target,
            "INSERT INTO {messages} (thread_id, seq, message_id, body, tokens) VALUES (?, ?, ?, ?, ?)",
            ...values,
          );
        }
        await rawSql(
          target,
          "INSERT INTO {threads} (thread_id, log_length) VALUES (?, ?), (?, ?)",
          "t1",
          2,
          "t2",
          1,
        );
        const migrated = await opener.at(target);
        expect(await mark(target, "t1")).toBe(0);
        expect(ids(await migrated.log.search!("t1", "index existed"))).toEqual(["old"]);
        expect(await mark(target, "t1")).toBe(2);
        expect(ids(await migrated.log.search!("t2", "indexed"))).toEqual(["other"]);
        await migrated.log.append("t1", 2, [say(2, "new", "appended after the index existed")]);
        expect(ids(await migrated.log.search!("t1", "appended index"))).toEqual(["new", "old"]);
      },
    );
  }
}
