/**
 * The README's API tour as a program (typechecked with the rest of the repository): `npx tsx examples/tour.ts`.
 */
import {
  createMessageCounter,
  createTokenizer,
  diffPlans,
  dropOldestToFit,
  emptyPlan,
  exportTranscript,
  formatPlanDiff,
  importTranscript,
  renderPrompt,
  ThreadLog,
  toProviderRequest,
  validateProviderRequest,
} from "../src/index.js";
import { generateSampleSession } from "../src/sample/index.js";

const jsonlText = exportTranscript(
  ThreadLog.from("sample", generateSampleSession({ messages: 400, seed: 3 })),
);

let log = ThreadLog.empty("thread-1"); // append-only; every append returns a new value
log = log.append([{ role: "user", parts: [{ type: "text", text: "Fix the flaky test" }] }]);
log = importTranscript(log, jsonlText); // or import a JSONL transcript atomically

const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
const v0 = emptyPlan("thread-1"); // everything included
const v1 = dropOldestToFit(log, v0, { counter, budget: 20_000 }); // a plan: drop the oldest unpinned groups
const prompt = renderPrompt(log, v1, { counter }); // provider-neutral, with provenance + hash
console.log(prompt.tokenCount, prompt.hash.slice(0, 12), prompt.messages[0]?.provenance);

const body = toProviderRequest("anthropic", prompt); // or "openai" / "responses"
console.log(validateProviderRequest("anthropic", body)); // [] — no orphaned call or result
console.log(formatPlanDiff(diffPlans(v0, v1, (id) => log.seqOf(id))));
