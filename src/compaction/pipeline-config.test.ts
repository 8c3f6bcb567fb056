import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import { call, result, text, validationError } from "../../test/support/builders.js";
import { replyWith, startFakeOpenAIServer } from "../../test/support/fake-openai-server.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { ValidationError } from "../errors/ledger-error.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan } from "../plan/compaction-plan.js";
import type { ArtifactStore } from "../stores/artifact-store.js";
import { createMemoryArtifactStore } from "../stores/memory/memory-artifact-store.js";
import type { SummaryCache } from "../stores/summary-cache.js";
import type { ArtifactPort } from "../strategies/externalization.js";
import type { Strategy } from "../strategies/strategy.js";
import type { SummaryCachePort } from "../strategies/summarizer.js";
import { createTokenBudget } from "../tokens/token-budget.js";
import { createDefaultPipeline, DEFAULT_PIPELINE_CONFIG } from "./default-pipeline.js";
import {
  loadPipelineConfig,
  marksDrops,
  parseConfigText,
  pipelineFromConfig,
  withStrategies,
} from "./pipeline-config.js";

const ISSUE_EXAMPLE = {
  budget: { model: "gpt-4o", reserveOutput: 4096 },
  strategies: [
    { use: "toolResultRetention", default: { keepTurns: 3 }, tools: { read_file: { keepLast: 2 } } },
    { use: "slidingWindow", keepGroups: 40 },
    { use: "summarize", target: 12, threshold: 4 },
  ],
};

const fieldOf = (fn: () => unknown): string | undefined => validationError(fn).where.field;

describe("pipelineFromConfig", () => {
  const dir = mkdtempSync(join(tmpdir(), "cl-config-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("builds the issue's example: strategies in order, the budget from the model table", () => {
    const { pipeline, budget } = pipelineFromConfig(ISSUE_EXAMPLE);
    expect(pipeline.strategies.map((s) => [s.name, s.cost])).toEqual([
      ["toolResultRetention", "free"],
      ["slidingWindow", "free"],
      ["summarize", "model"],
    ]);
    expect(budget?.contextWindow).toBe(128_000);
    expect(budget?.reserveOutput).toBe(4096);
  });

  it("reads the same config from JSON and YAML files", () => {
    const json = join(dir, "c.json");
    writeFileSync(json, JSON.stringify(ISSUE_EXAMPLE));
    const yaml = join(dir, "c.yaml");
    writeFileSync(
      yaml,
      [
        "budget: { model: gpt-4o, reserveOutput: 4096 }",
        "strategies:",
        "  - use: toolResultRetention",
        "    default: { keepTurns: 3 }",
        "    tools: { read_file: { keepLast: 2 } }",
        "  - { use: slidingWindow, keepGroups: 40 }",
        "  - { use: summarize, target: 12, threshold: 4 }",
      ].join("\n"),
    );
    expect(loadPipelineConfig(yaml).config).toEqual(loadPipelineConfig(json).config);
  });

  it("names the field of a bad value, inside strategy entries too", () => {
    expect(
      fieldOf(() => pipelineFromConfig({ strategies: [{ use: "slidingWindow", keepGroups: -1 }] })),
    ).toBe("strategies[0].keepGroups");
    expect(
      fieldOf(() =>
        pipelineFromConfig({ strategies: [{ use: "summarize" }, { use: "summarize", target: 1.5 }] }),
      ),
    ).toBe("strategies[1].target");
    expect(fieldOf(() => pipelineFromConfig({ strategies: [{ use: "slidingWindo" }] }))).toBe(
      "strategies[0].use",
    );
    expect(fieldOf(() => pipelineFromConfig({ strategies: [], goalRatio: 0 }))).toBe("goalRatio");
    expect(fieldOf(() => pipelineFromConfig({ strategies: [], budgte: {} }))).toBe("budgte");
    expect(
      fieldOf(() => pipelineFromConfig({ budget: { model: "gpt-4o", reserveOutput: -5 }, strategies: [] })),
    ).toBe("budget.reserveOutput");
    expect(fieldOf(() => pipelineFromConfig({ strategies: [{ use: "externalize", minChars: 10 }] }))).toBe(
      "strategies[0].artifacts",
    );
  });

  it("reports syntax errors with the file and line", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, '{\n  "strategies": [\n    { "use": "summarize", }\n  ]\n}');
    expect(() => loadPipelineConfig(bad)).toThrow(/bad\.json: config file is not valid JSON/);
    expect(() => parseConfigText("strategies:\n  - use: [unclosed\n", "c.yml")).toThrow(ValidationError);
    const missing = join(dir, "missing.json");
    expect(() => loadPipelineConfig(missing)).toThrow(/cannot read config file/);
  });

  it("runs a user's strategy registered by name exactly like a built-in", () => {
    const custom = (options: Record<string, unknown>): Strategy => ({
      name: "mine",
      cost: "free",
      kinds: ["clear"],
      propose: () => ({
        actions: [],
        notes: [{ level: "info", code: "seen", message: JSON.stringify(options) }],
      }),
    });
    const { pipeline } = pipelineFromConfig(
      { strategies: [{ use: "mine", limit: 3 }] },
      { custom: { mine: custom } },
    );
    expect(pipeline.strategies[0]!.name).toBe("mine");
  });

  it("builds externalization with the store it is given, and the default pipeline", () => {
    const { pipeline } = pipelineFromConfig(
      { strategies: [{ use: "externalize", minChars: 4000 }] },
      { artifacts: createMemoryArtifactStore(), tenant: "acme" },
    );
    expect(pipeline.strategies[0]!.kinds).toContain("externalize");
    expect(createDefaultPipeline().strategies.map((s) => s.name)).toEqual(
      DEFAULT_PIPELINE_CONFIG.strategies.map((s) => (s.use === "summarize" ? "summarize" : s.use)),
    );
  });

  it("a pipeline that externalizes moves the non-replayable groups its fallback gives up to artifacts", async () => {
    const messages: MessageInput[] = [{ id: "u", role: "user", parts: [text("book the trip")] }];
    for (let i = 0; i < 6; i++) {
      const tool = i % 3 === 0 ? "book_flight" : "bash";
      messages.push({ id: `a${i}`, role: "assistant", parts: [call(`c${i}`, "{}", tool)] });
      messages.push({ id: `t${i}`, role: "tool", parts: [result(`c${i}`, `${tool} ${i} `.repeat(60))] });
    }
    messages.push({ id: "u2", role: "user", parts: [text("and now?")] });
    const log = ThreadLog.from("t", messages);
    const counter = simpleCounter();
    const budget = createTokenBudget({ contextWindow: 420, reserveOutput: 0, safetyMargin: 0 });
    const artifacts = createMemoryArtifactStore();
    // The externalize step itself never fires here (its groups are all under minChars): only the fallback acts.
    const config = { strategies: [{ use: "externalize", minChars: 1_000_000 }], goalRatio: 1 };
    const kept = await pipelineFromConfig(config, { artifacts, tenant: "acme" }).pipeline.run({
      log,
      plan: emptyPlan("t"),
      counter,
      budget,
    });
    expect(kept.ok).toBe(true);
    const pointers = kept.plan.actions.filter((a) => a.kind === "externalize");
    const dropped = kept.plan.actions.filter((a) => a.kind === "drop").flatMap((a) => a.span);
    // Every unclassed group goes before a non-replayable one is touched, and that one is moved, not dropped.
    expect(dropped).toEqual(["a1", "t1", "a2", "t2", "a4", "t4", "a5", "t5"]);
    expect(pointers.map((a) => a.span)).toEqual([["a0", "t0"]]);
    const id = (pointers[0]!.record as { artifactId: string }).artifactId;
    expect((await artifacts.get(id, { tenant: "acme", clearance: "internal" }))?.content).toContain(
      "book_flight 0",
    );
    // Without an externalize step, the same groups are dropped (last, after every other group).
    const plain = await pipelineFromConfig({ strategies: [], goalRatio: 1 }, { artifacts }).pipeline.run({
      log,
      plan: emptyPlan("t"),
      counter,
      budget,
    });
    expect(plain.plan.actions.some((a) => a.kind === "externalize")).toBe(false);
    expect(plain.plan.actions.find((a) => a.kind === "drop")?.span).toContain("t0");
  });

  it("marks the fallback's drops when the pipeline externalizes or the config asks, lighter pipelines alike", async () => {
    const externalizing = { strategies: [{ use: "externalize", minChars: 1_000_000 }], goalRatio: 1 };
    expect(marksDrops(externalizing)).toBe(true);
    expect(marksDrops({ ...externalizing, fallback: { markDrops: false } })).toBe(false);
    expect(marksDrops({ ...externalizing, fallback: false })).toBe(false);
    expect(marksDrops(DEFAULT_PIPELINE_CONFIG)).toBe(false);
    expect(marksDrops({ strategies: [], fallback: { markDrops: true } })).toBe(true);
    // A pipeline of the free steps only (or a rehydrating turn's) drops as the whole one does.
    const lighter = withStrategies(externalizing, []);
    expect([lighter.strategies, marksDrops(lighter)]).toEqual([[], true]);
    expect(withStrategies(DEFAULT_PIPELINE_CONFIG, [])).toEqual({
      ...DEFAULT_PIPELINE_CONFIG,
      strategies: [],
    });
    const messages: MessageInput[] = [{ id: "u", role: "user", parts: [text("clean up")] }];
    for (let i = 0; i < 6; i++) {
      messages.push({ id: `a${i}`, role: "assistant", parts: [call(`c${i}`, "{}", "bash")] });
      messages.push({ id: `t${i}`, role: "tool", parts: [result(`c${i}`, `bash ${i} `.repeat(60))] });
    }
    messages.push({ id: "u2", role: "user", parts: [text("and now?")] });
    const input = {
      log: ThreadLog.from("t", messages),
      plan: emptyPlan("t"),
      counter: simpleCounter(),
      budget: createTokenBudget({ contextWindow: 420, reserveOutput: 0, safetyMargin: 0 }),
    };
    const artifacts = createMemoryArtifactStore();
    const marker = (config: Parameters<typeof pipelineFromConfig>[0]) =>
      pipelineFromConfig(config, { artifacts })
        .pipeline.run(input)
        .then((out) =>
          out.ok ? out.plan.actions.filter((a) => a.kind === "drop").map((a) => a.record) : [],
        );
    expect(await marker(externalizing)).toEqual([expect.objectContaining({ marker: true })]);
    expect(await marker(lighter)).toEqual([expect.objectContaining({ marker: true })]);
    expect(await marker({ strategies: [], goalRatio: 1 })).toEqual([
      expect.not.objectContaining({ marker: true }),
    ]);
  });

  it("builds oversizedExcerpt from its entry", () => {
    const { pipeline } = pipelineFromConfig({ strategies: [{ use: "oversizedExcerpt", share: 0.3 }] });
    expect(pipeline.strategies.map((s) => s.name)).toEqual(["oversizedExcerpt"]);
  });

  it("hands the stores to strategies through their ports, which the store interfaces satisfy", () => {
    expectTypeOf<ArtifactStore>().toExtend<ArtifactPort>();
    expectTypeOf<SummaryCache>().toExtend<SummaryCachePort>();
  });

  it("a config's OpenAI summarizer talks to the configured server (SDK loaded on first use)", async () => {
    const server = await startFakeOpenAIServer({ apiKey: "sk-test" });
    try {
      process.env.CL_TEST_KEY = "sk-test";
      const answer = { goals: ["fix the parser"], toolOutcomes: ["tests ran: 3 failed"] };
      server.enqueue(replyWith(JSON.stringify(answer)));
      const { pipeline } = pipelineFromConfig({
        strategies: [{ use: "summarize" }],
        summarizer: { kind: "openai", model: "tiny", baseURL: server.baseURL, apiKeyEnv: "CL_TEST_KEY" },
      });
      const messages = [{ id: "u", role: "user" as const, parts: [text("fix the parser")] }];
      for (let i = 0; i < 8; i++) {
        messages.push({ id: `a${i}`, role: "assistant" as const, parts: [call(`c${i}`)] } as never);
        messages.push({
          id: `t${i}`,
          role: "tool" as const,
          parts: [result(`c${i}`, "x".repeat(300))],
        } as never);
      }
      const log = ThreadLog.from("t", messages);
      const budget = createTokenBudget({ contextWindow: 400, reserveOutput: 0, safetyMargin: 0 });
      const out = await pipeline.run({ log, plan: emptyPlan("t"), counter: simpleCounter(), budget });
      expect(out.ok).toBe(true);
      expect(server.requests).toHaveLength(1);
      const summary = out.plan.actions.find((a) => a.kind === "summarize");
      expect(summary?.record).toMatchObject({ kind: "summarize", summarizerId: "openai:tiny" });
      expect(JSON.stringify(summary)).toContain("fix the parser");
    } finally {
      await server.close();
    }
  });
});
