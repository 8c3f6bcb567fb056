/**
 * A compaction pipeline from a config, run turn by turn on a generated agent session: `npx tsx examples/pipeline.ts`.
 */
import {
  createMessageCounter,
  createTokenBudget,
  createTokenizer,
  emptyPlan,
  pipelineFromConfig,
  ThreadLog,
} from "../src/index.js";
import { generateSampleSession } from "../src/sample/index.js";

const { pipeline } = pipelineFromConfig({
  strategies: [
    { use: "toolResultRetention", default: { keepTurns: 3 }, tools: { read_file: { keepLast: 2 } } },
    { use: "slidingWindow", keepGroups: 40 },
    { use: "summarize", target: 12, threshold: 4 },
  ],
});
const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
const budget = createTokenBudget({ model: "gpt-4o", contextWindow: 12_000, reserveOutput: 2_000 });

const session = generateSampleSession({ messages: 300, seed: 7 });
let log = ThreadLog.empty("demo");
let plan = emptyPlan("demo");
for (let at = 0; at < session.length; at += 20) {
  log = log.append(session.slice(at, at + 20)); // what happened since the last model call
  const run = await pipeline.run({ log, plan, counter, budget });
  if (!run.ok) throw run.error; // the previous plan stays in force; the error says why
  plan = run.plan; // cumulative: earlier decisions are kept, so the prefix stays cached
  const steps = run.report.steps.filter((s) => s.outcome === "applied").map((s) => s.strategy);
  console.log(
    `${log.length} messages → ${run.prompt.tokenCount} tokens, plan v${plan.version}`,
    steps.join(", "),
  );
}
