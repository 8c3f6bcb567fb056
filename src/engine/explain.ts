import type { Role } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { FATE_OF, finalStates, type MessageFate } from "../plan/final-states.js";
import { decisionAt } from "../plan/resolve-for-log.js";
import type { MessageCounter } from "../tokens/tokenizer.js";

export type { MessageFate } from "../plan/final-states.js";

/** One message of an explanation. */
export interface ExplainRow {
  readonly seq: number;
  readonly id: string;
  readonly role: Role;
  readonly state: MessageFate;
  /** The message's own tokens (as logged, before any placeholder or summary). */
  readonly tokens: number;
  /** Strategy and reason of the action governing the message; absent when it is kept by default. */
  readonly strategy?: string;
  readonly reason?: string;
}

/** Per message, what a plan version does with it, plus totals by state. */
export interface Explanation {
  readonly threadId: string;
  readonly planVersion: number;
  readonly logSeq: number;
  readonly rows: ReadonlyArray<ExplainRow>;
  readonly totals: Readonly<Record<MessageFate, { readonly messages: number; readonly tokens: number }>>;
}

/** Explains a plan against a log: one row per message with its state, tokens, strategy and reason. */
export function explainPlan(log: ThreadLog, plan: CompactionPlan, counter: MessageCounter): Explanation {
  // The message counts are the shared final-state counts; the rows read the same resolution, so they agree.
  const states = finalStates(log, plan);
  const { resolution } = states;
  const totals = Object.fromEntries(
    Object.entries(states.counts).map(([fate, messages]) => [fate, { messages, tokens: 0 }]),
  ) as Record<MessageFate, { messages: number; tokens: number }>;
  const rows: ExplainRow[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    const message = log.at(seq)!;
    const decision = decisionAt(resolution, seq);
    const state = FATE_OF[decision?.kind ?? "include"];
    const tokens = counter.countMessage(message, message.hash);
    totals[state].tokens += tokens;
    rows.push({
      seq,
      id: message.id,
      role: message.role,
      state,
      tokens,
      ...(decision === undefined
        ? {}
        : { strategy: decision.action.strategy, reason: decision.action.reason }),
    });
  }
  return { threadId: log.threadId, planVersion: plan.version, logSeq: log.length, rows, totals };
}

/** A readable table of an explanation: a title, the column header, one line per message, the totals by state. */
export function formatExplanation(explanation: Explanation): string {
  const head = `plan v${explanation.planVersion} of thread ${explanation.threadId} over ${explanation.logSeq} message(s)`;
  return [head, ...explanationTable(explanation.rows), `totals: ${describeTotals(explanation)}`].join("\n");
}

function cell(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
}

/** The column header and one line per row: seq, id, role, state, tokens, and the strategy and reason. */
export function explanationTable(rows: ReadonlyArray<ExplainRow>): string[] {
  const idWidth = Math.min(36, Math.max(2, ...rows.map((r) => r.id.length)));
  const header = `${"seq".padStart(6)}  ${cell("id", idWidth)}  ${cell("role", 9)}  ${cell("state", 12)}  ${"tokens".padStart(7)}  strategy: reason`;
  const lines = rows.map((r) => {
    const why = r.strategy === undefined ? "-" : `${r.strategy}: ${r.reason ?? ""}`;
    return `${String(r.seq).padStart(6)}  ${cell(r.id, idWidth)}  ${cell(r.role, 9)}  ${cell(r.state, 12)}  ${String(r.tokens).padStart(7)}  ${why}`;
  });
  return [header, ...lines];
}

/** `kept 20 (1234 tokens), cleared 9 (310 tokens)`: the states that occur, with their messages and tokens. */
export function describeTotals(explanation: Explanation): string {
  const parts = Object.entries(explanation.totals)
    .filter(([, t]) => t.messages > 0)
    .map(([state, t]) => `${state} ${t.messages} (${t.tokens} tokens)`);
  return parts.join(", ") || "no messages";
}
