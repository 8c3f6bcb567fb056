/**
 * A compaction that fails because its model step failed names that failure first (issue 18, item 2): the
 * summarizer's reason (`rate_limited: HTTP 429 …`, a malformed answer), then the budget sentence, in the
 * `compact` and `prepare` output and in the engine's result, for both providers' summarizers.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  BudgetInfeasibleError,
  createContextEngine,
  createMemoryStores,
  loadPipelineConfig,
  SummarizerError,
} from "../src/index.js";
import { cliSandbox, runInProcess } from "./support/cli-run.js";
import { startFakeAnthropicServer } from "./support/fake-anthropic-server.js";
import {
  type FakeServer,
  type FakeStep,
  failWith,
  startFakeOpenAIServer,
} from "./support/fake-openai-server.js";

const sandbox = cliSandbox("context-ledger-summarizer-failure-");
// The config names the variable holding the key; the summarizer reads it from the process environment.
const KEY = "CL_TEST_SUMMARIZER_KEY";
process.env[KEY] = "sk-test";
afterAll(() => {
  sandbox.remove();
  delete process.env[KEY];
});

/** A transcript of 40 long messages, far over a budget of 600 tokens. */
function transcript(): string {
  const lines: string[] = [JSON.stringify({ role: "system", content: "You are a careful assistant." })];
  for (let i = 0; i < 40; i++) {
    const role = i % 2 === 0 ? "user" : "assistant";
    lines.push(
      JSON.stringify({ role, content: `turn ${i}: ${"the build log says many things ".repeat(12)}` }),
    );
  }
  return `${lines.join("\n")}\n`;
}

const providers = [
  { kind: "openai", start: () => startFakeOpenAIServer({ apiKey: "sk-test" }) },
  { kind: "anthropic", start: () => startFakeAnthropicServer({ apiKey: "sk-test" }) },
] as const;

const faults: ReadonlyArray<{ name: string; step: () => FakeStep; reason: RegExp }> = [
  { name: "HTTP 429", step: () => failWith(429, { retryAfterSeconds: 7 }), reason: /rate_limited.*429/ },
  {
    name: "an HTML page with HTTP 200",
    step: () => ({
      kind: "raw",
      status: 200,
      body: "<html><body>Sign in</body></html>",
      contentType: "text/html",
    }),
    reason: /malformed.*not a model answer/,
  },
];

describe.each(providers)("a failing $kind summarizer", ({ kind, start }) => {
  let server: FakeServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  function config(baseURL: string): string {
    return sandbox.file(
      `${kind}-config.json`,
      JSON.stringify({
        strategies: [{ use: "summarize" }],
        fallback: false,
        summarizer: { kind, model: "small-model", baseURL, apiKeyEnv: KEY },
      }),
    );
  }

  it.each(faults)("$name: the CLI prints the summarizer's reason first, the budget second", async (fault) => {
    server = await start();
    for (let i = 0; i < 20; i++) server.enqueue(fault.step());
    const db = sandbox.db();
    const file = sandbox.file("t.jsonl", transcript());
    expect((await runInProcess(["ingest", file, "--thread", "t", "--db", db])).code).toBe(0);
    const cfg = config(server.baseURL);
    for (const command of ["compact", "prepare"]) {
      const run = await runInProcess([
        command,
        "--thread",
        "t",
        "--budget",
        "600",
        "--config",
        cfg,
        "--db",
        db,
      ]);
      expect(run.code, run.stderr).toBe(1);
      const reason = run.stderr.search(fault.reason);
      const budget = run.stderr.search(/still over the target/);
      expect(reason, run.stderr).toBeGreaterThanOrEqual(0);
      expect(budget, run.stderr).toBeGreaterThan(reason);
      expect(run.stderr).toMatch(/^[^\n]*summarize failed \(/);
    }
  });

  it("the engine's compaction result carries the summarizer's error as the cause", async () => {
    server = await start();
    for (let i = 0; i < 20; i++) server.enqueue(failWith(429));
    const { pipeline } = loadPipelineConfig(config(server.baseURL));
    const budget = { contextWindow: 8_000, reserveOutput: 500 };
    const engine = createContextEngine({ stores: createMemoryStores(), pipeline, budget });
    const lines = transcript()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { role: string; content: string });
    await engine.append(
      "t",
      lines.map((l) => ({ role: l.role as "user", parts: [{ type: "text" as const, text: l.content }] })),
    );
    const result = await engine.compact("t", { budget: 600 });
    expect(result.ok).toBe(false);
    const error = result.error!;
    expect(error).toBeInstanceOf(BudgetInfeasibleError);
    expect(error.message).toMatch(
      /^summarize failed \(.*rate_limited.*\), so the history is still over the target/,
    );
    expect(error.cause).toBeInstanceOf(SummarizerError);
    expect((error.cause as SummarizerError).reason).toBe("rate_limited");
  });
});
