/**
 * The shipped example config (`examples/compaction.yaml`) loads, builds the strategies it names, and compacts a
 * real agent run into valid requests within its budget: a config file users copy must never rot.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineConfig } from "../src/compaction/pipeline-config.js";
import { createContextEngine, createMemoryStores, validateProviderRequest } from "../src/index.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import { repoRoot } from "./support/repo-root.js";
import { listTrajectories } from "./support/trajectories.js";

const FILE = join(repoRoot, "examples", "compaction.yaml");

describe("examples/compaction.yaml", () => {
  it("loads and names its strategies, budget and classes", () => {
    const stores = createMemoryStores();
    const { pipeline, budget, config } = loadPipelineConfig(FILE, { artifacts: stores.artifacts });
    expect(pipeline.strategies.map((s) => s.name)).toEqual([
      "toolResultRetention",
      "externalization",
      "oversizedExcerpt",
      "summarize",
    ]);
    expect(budget?.contextWindow).toBe(128_000);
    expect(config.toolClasses?.str_replace_editor).toBe("none");
  });

  const runs = listTrajectories();
  it.skipIf(runs.length === 0)("compacts a real run at a tight budget into valid requests", async () => {
    const stores = createMemoryStores();
    const { config } = loadPipelineConfig(FILE, { artifacts: stores.artifacts });
    const engine = createContextEngine({ stores, pipeline: config, budget: { contextWindow: 12_000 } });
    const messages = parseTranscript(
      runs.find((r) => r.name.startsWith("mini-swe-agent"))?.text ?? runs[0]!.text,
    );
    let calls = 0;
    for (const [i, message] of messages.entries()) {
      // A model call before each assistant reply that does not follow another one.
      if (message.role === "assistant" && i > 0 && messages[i - 1]!.role !== "assistant") {
        const turn = await engine.prepareTurn("t", { format: "openai" });
        expect(validateProviderRequest("openai", turn.request as never)).toEqual([]);
        expect(turn.prompt.tokenCount).toBeLessThanOrEqual(12_000);
        calls++;
      }
      await engine.append("t", [message]);
    }
    expect(calls).toBeGreaterThan(3);
    // It did compact: plan versions were committed, with clears among their actions.
    const plan = await stores.plans.latest("t");
    expect(plan?.version ?? 0).toBeGreaterThan(0);
    expect(plan?.actions.some((a) => a.kind === "clear")).toBe(true);
  });
});
