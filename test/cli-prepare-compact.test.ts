/**
 * `prepare` and `compact` agree (issue 14): on every shared trajectory, at a quarter and a tenth of its size, the
 * harness step on one database and the maintenance compaction on another give the same outcome — both succeed,
 * with the same request size and every message in the same final state. (A harness step used to refuse a budget
 * that `compact` handled: it threw before the summary that would fit had run.)
 */
import { afterAll, describe, expect, it } from "vitest";
import type { FateCounts } from "../src/index.js";
import { cliOn as cli, cliSandbox, jsonOf } from "./support/cli-run.js";
import { listTrajectories, trajectoriesAvailable } from "./support/trajectories.js";

const sandbox = cliSandbox("context-ledger-prepare-compact-");
afterAll(() => sandbox.remove());

interface Compacted {
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly states: FateCounts;
}
interface Prepared {
  readonly stats: { readonly tokens: number; readonly states: FateCounts };
}

describe.skipIf(!trajectoriesAvailable)("prepare and compact at the same budget", () => {
  for (const file of trajectoriesAvailable ? listTrajectories() : []) {
    it(`${file.name}: both succeed with the same request size and final states`, async () => {
      const [a, b] = [sandbox.db(), sandbox.db()];
      for (const db of [a, b]) expect((await cli(db, "ingest", file.path, "--thread", "t")).code).toBe(0);
      const size = jsonOf<Compacted>(
        await cli(a, "compact", "--thread", "t", "--budget", "100000000", "--json"),
      );
      for (const share of [0.25, 0.1]) {
        const budget = String(Math.max(2_000, Math.floor(size.tokensBefore * share)));
        const compact = await cli(a, "compact", "--thread", "t", "--budget", budget, "--json");
        const prepare = await cli(b, "prepare", "--thread", "t", "--budget", budget, "--json");
        expect(compact.code, compact.stderr).toBe(0);
        expect(prepare.code, prepare.stderr).toBe(0);
        const compacted = jsonOf<Compacted>(compact);
        const prepared = jsonOf<Prepared>(prepare);
        expect(prepared.stats.tokens).toBeLessThanOrEqual(Number(budget));
        expect(prepared.stats.tokens).toBe(compacted.tokensAfter);
        expect(prepared.stats.states).toEqual(compacted.states);
      }
    });
  }
});
