/**
 * The `demo` command: generate a sample agent session, import it as a JSONL transcript, render it with a plan
 * that uses every action (include, clear, summarize, externalize, drop), check the request against each
 * provider's rules and print what happened. Needs nothing but this repository.
 */
import {
  type CompactionPlan,
  createMessageCounter,
  createTokenizer,
  diffPlans,
  emptyPlan,
  exportTranscript,
  formatPlanDiff,
  type Group,
  generateSampleSession,
  importTranscript,
  nextPlan,
  type PlanAction,
  parsePlan,
  type RenderedPrompt,
  renderPrompt,
  serializePlan,
  ThreadLog,
  toProviderRequest,
  validateProviderRequest,
} from "../index.js";

const THREAD = "demo-thread";

function sessionAsJsonl(): string {
  // The generator writes log inputs; exporting them gives the same JSONL shape real transcripts come in.
  const generated = ThreadLog.from(
    "generated",
    generateSampleSession({ messages: 80, seed: 42, endPending: true }),
  );
  return exportTranscript(generated);
}

function toolName(log: ThreadLog, group: Group): string {
  const call = log.at(group.seqs[0]!)!.parts.find((p) => p.type === "tool_call");
  return call?.type === "tool_call" ? call.name : "";
}

function groupTokens(group: Group, count: (seq: number) => number): number {
  return group.seqs.reduce((sum, seq) => sum + count(seq), 0);
}

/** An example plan: every action kind, each on spans of whole groups so no call is split from its result. */
function examplePlan(log: ThreadLog, count: (seq: number) => number): CompactionPlan {
  const groups = log.groups.filter((g) => !g.pending);
  const older = groups.slice(1, Math.floor(groups.length * 0.6)); // never the system prompt or the recent tail
  const ids = (gs: ReadonlyArray<Group>) => gs.flatMap((g) => g.messageIds);
  const dropped = older.slice(0, 4);
  const summarized = older.slice(4, 14);
  const rest = older.slice(14);
  const biggest = [...rest]
    .filter((g) => g.kind === "tool_call")
    .sort((a, b) => groupTokens(b, count) - groupTokens(a, count))[0]!;
  const toClear = rest.filter(
    (g) => g !== biggest && g.kind === "tool_call" && toolName(log, g) !== "run_tests",
  );
  const actions: PlanAction[] = [
    {
      kind: "include",
      span: log.groups[0]!.messageIds,
      record: { kind: "include" },
      strategy: "demo",
      reason: "system prompt is pinned",
    },
    {
      kind: "drop",
      span: ids(dropped),
      record: { kind: "drop", reason: "oldest exploration, superseded" },
      strategy: "demo",
      reason: "oldest groups",
    },
    {
      kind: "summarize",
      span: ids(summarized),
      record: {
        kind: "summarize",
        summary:
          "Goal: fix the retry policy. Read src/server.ts and src/db/pool.ts; tests failed on sorted fixture keys.",
        structured: { goals: ["fix the retry policy"], openItems: ["fixture expects sorted keys"] },
        summarizerId: "demo-handwritten",
        promptVersion: "v1",
      },
      strategy: "demo",
      reason: "older span condensed",
    },
    {
      kind: "externalize",
      span: biggest.messageIds,
      record: {
        kind: "externalize",
        artifactId: "art-demo-1",
        summary: `Output of ${toolName(log, biggest)} kept in the artifact store.`,
        sizeChars: biggest.seqs.reduce((n, seq) => n + JSON.stringify(log.at(seq)!.parts).length, 0),
      },
      strategy: "demo",
      reason: "largest tool result moved out of the prompt",
    },
    {
      kind: "clear",
      span: ids(toClear),
      record: { kind: "clear" },
      strategy: "demo",
      reason: "stale tool results",
    },
  ];
  return nextPlan(emptyPlan(THREAD), actions, log.length);
}

function kinds(prompt: RenderedPrompt): string {
  const counts = new Map<string, number>();
  for (const m of prompt.messages) counts.set(m.provenance.kind, (counts.get(m.provenance.kind) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ${n}`).join(", ");
}

/** Runs the demo, printing to `print`; returns the exit code (0 when every check held). */
export function runDemo(print: (line: string) => void = console.log): number {
  const console = { log: print };
  const log = importTranscript(ThreadLog.empty(THREAD), sessionAsJsonl(), {
    source: "generated-sample.jsonl",
  });
  const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
  const count = (seq: number) => counter.countMessage(log.at(seq)!, log.at(seq)!.hash);
  console.log(
    `Imported ${log.length} messages: ${log.groups.length} groups, ${log.turns.length} turns, ${log.pendingCalls.size} pending call(s).`,
  );

  const before = renderPrompt(log, emptyPlan(THREAD), { counter });
  const plan = parsePlan(serializePlan(examplePlan(log, count))); // plans survive a JSON round trip
  const after = renderPrompt(log, plan, { counter, previous: before });
  const again = renderPrompt(log, plan, {
    counter: createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai"),
  });

  console.log(`\nTokens before: ${before.tokenCount} (${before.messages.length} messages)`);
  console.log(`Tokens after:  ${after.tokenCount} (${after.messages.length} messages: ${kinds(after)})`);
  console.log(
    `Saved ${before.tokenCount - after.tokenCount} tokens (${((1 - after.tokenCount / before.tokenCount) * 100).toFixed(1)}%); ${after.unchangedLeadingTokens} leading tokens unchanged.`,
  );
  console.log(`Render hash ${after.hash.slice(0, 16)}…, deterministic: ${again.hash === after.hash}`);

  for (const format of ["openai", "responses", "anthropic"] as const) {
    const problems = validateProviderRequest(format, toProviderRequest(format, after));
    console.log(
      `${format.padEnd(9)} request: ${problems.length === 0 ? "valid" : `INVALID: ${problems.join("; ")}`}`,
    );
  }

  const synthetic = after.messages.filter((m) => m.provenance.synthetic);
  console.log("\nSynthetic messages:");
  for (const m of synthetic) {
    const text = m.parts
      .map((p) => (p.type === "text" ? p.text : p.type === "tool_result" ? p.content : ""))
      .join(" ");
    console.log(`  [${m.provenance.kind}] ${text.replace(/\n/g, " ").slice(0, 110)}`);
  }
  const cleared = after.messages.find((m) => m.provenance.kind === "cleared" && m.role === "tool");
  if (cleared?.parts[0]?.type === "tool_result")
    console.log(`  cleared result looks like: ${cleared.parts[0].content}`);

  console.log(`\n${formatPlanDiff(diffPlans(emptyPlan(THREAD), plan, (id) => log.seqOf(id)))}`);
  const problems = ["openai", "responses", "anthropic"].some(
    (f) => validateProviderRequest(f as "openai", toProviderRequest(f as "openai", after)).length > 0,
  );
  return problems || again.hash !== after.hash ? 2 : 0;
}
