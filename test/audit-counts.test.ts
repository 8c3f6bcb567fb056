/**
 * One account (issue 14, item 8): on a real trajectory, at a budget where the hard fallback drops messages a
 * summary's span had already claimed, `compact`, `explain`, `diff`, the summary header and the model-call record
 * give every message exactly one final state and the same counts, which add up to the thread's length.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { FateCounts, MessageFate } from "../src/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { cliOn as cli, cliSandbox, jsonOf } from "./support/cli-run.js";
import { trajectoriesAvailable, trajectoriesDir } from "./support/trajectories.js";

const sandbox = cliSandbox("context-ledger-audit-counts-");
afterAll(() => sandbox.remove());

const FILE = join(trajectoriesDir, "mini-swe-agent", "django__django-15629.jsonl");
// Low enough that the default pipeline summarizes most of the run. (Before the fallback spared summaries, it
// also dropped 56 of the summary's 100 messages here; src/plan/final-states.test.ts covers that overlap.)
const BUDGET = "20000";

const sum = (counts: FateCounts): number => Object.values(counts).reduce((n, c) => n + c, 0);

/** `<ref>+<n>` → n (the messages a call-record reference governs). */
const countOf = (ref: string): number => Number(ref.slice(ref.lastIndexOf("+") + 1));

describe.skipIf(!trajectoriesAvailable)("one account of every message", () => {
  it("compact, explain, diff, the summary header and the call record agree and add up", async () => {
    const db = sandbox.db();
    const thread = "django";
    expect((await cli(db, "ingest", FILE, "--thread", thread)).code).toBe(0);

    const compact = jsonOf<{ logSeq: number; actionsByKind: Record<string, number>; states: FateCounts }>(
      await cli(db, "compact", "--thread", thread, "--budget", BUDGET, "--json"),
    );
    const length = compact.logSeq;
    const states = compact.states;
    expect(sum(states)).toBe(length);
    expect(states.summarized).toBeGreaterThan(0);

    const stores = openSqliteStores({ path: db });
    try {
      const plan = await stores.plans.latest(thread);
      const summary = plan.actions.find((a) => a.kind === "summarize")!;
      const dropped = new Set(plan.actions.filter((a) => a.kind === "drop").flatMap((a) => a.span));
      // Where a summary's span also holds messages that ended up dropped, only the rest count as summarized.
      const overlap = summary.span.filter((id) => dropped.has(id)).length;
      expect(summary.span.length - overlap).toBe(states.summarized);

      // compact from v0: each message counted once under its new state (no span sums).
      expect(compact.actionsByKind).toMatchObject({
        clear: states.cleared,
        summarize: states.summarized,
        externalize: states.externalized,
        drop: states.dropped,
      });

      const explain = jsonOf<{ totals: Record<MessageFate, { messages: number }>; rows: unknown[] }>(
        await cli(db, "explain", "--thread", thread, "--json"),
      );
      expect(explain.rows).toHaveLength(length);
      for (const [fate, n] of Object.entries(states)) {
        expect(explain.totals[fate as MessageFate].messages, fate).toBe(n);
      }

      const diff = jsonOf<{
        changes: Array<{ to: { kind: string } }>;
        states: { from: FateCounts; to: FateCounts };
      }>(await cli(db, "diff", "--thread", thread, "0", "latest", "--json"));
      expect(diff.states.to).toEqual(states);
      expect(diff.states.from).toEqual({ ...zero, kept: length });
      const changedTo = (kind: string) => diff.changes.filter((c) => c.to.kind === kind).length;
      expect([changedTo("clear"), changedTo("summarize"), changedTo("drop")]).toEqual([
        states.cleared,
        states.summarized,
        states.dropped,
      ]);
      const diffText = (await cli(db, "diff", "--thread", thread, "0", "latest")).stdout;
      expect(diffText).toContain(`(${length} message(s))`);

      const render = jsonOf<{ messages: Array<{ content: unknown }> }>(
        await cli(db, "render", "--thread", thread, "--format", "openai"),
      );
      const headers = render.messages
        .map((m) => (typeof m.content === "string" ? m.content : ""))
        .map((text) => /^\[Summary of (\d+) earlier messages?[;\]]/.exec(text)?.[1])
        .filter((n) => n !== undefined)
        .map(Number);
      expect(headers.reduce((a, b) => a + b, 0)).toBe(states.summarized);

      const prepare = jsonOf<{ callId: string; stats: { states: FateCounts } }>(
        await cli(db, "prepare", "--thread", thread, "--budget", BUDGET),
      );
      expect(prepare.stats.states).toEqual(states);
      const record = (await stores.calls.get(prepare.callId))!;
      const byPrefix = (prefix: string) =>
        record.evictions.filter((r) => r.startsWith(prefix)).reduce((n, r) => n + countOf(r), 0);
      expect(record.summaries.reduce((n, r) => n + countOf(r), 0)).toBe(states.summarized);
      expect(byPrefix("drop:")).toBe(states.dropped);
      expect(byPrefix("externalize:")).toBe(states.externalized);
      expect(byPrefix("clear:")).toBe(states.cleared);
      // Every message the record does not name is kept.
      const named = record.evictions.reduce((n, r) => n + countOf(r), 0) + states.summarized;
      expect(length - named).toBe(states.kept);
    } finally {
      await stores.close();
    }
  });
});

const zero: FateCounts = { kept: 0, cleared: 0, summarized: 0, externalized: 0, dropped: 0 };
