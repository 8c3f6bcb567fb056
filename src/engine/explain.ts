import { ClearanceError } from "../errors/ledger-error.js";
import type { Message, Role, Sensitivity } from "../log/message.js";
import { mayRead, sensitivityOfMessage } from "../log/sensitivity.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { FATE_OF, finalStates, type MessageFate } from "../plan/final-states.js";
import { decisionAt } from "../plan/resolve-for-log.js";
import { type ReaderClearance, withheldText } from "../render/withhold-content.js";
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
  /**
   * The start of the message's content on one line: its text, tool calls as `name(args)`, results; for a message
   * above the reader's clearance, the stub that says it was withheld.
   */
  readonly preview: string;
  /**
   * The message's class when it is above the reader's clearance: its content is then neither previewed nor
   * searched.
   */
  readonly withheld?: Sensitivity;
}

/** Which rows an explanation lists (totals always cover the whole plan). */
export interface ExplainFilter {
  /** Only messages in this final state. */
  readonly state?: MessageFate;
  /** Only messages whose content holds this text (case-insensitive): "where did X go?". */
  readonly grep?: string;
  /** Only the message with this id. */
  readonly id?: string;
}

/** Characters of content a row previews. */
const PREVIEW_CHARS = 60;

/** The message's content as one searchable text. */
function contentText(message: Message): string {
  const bits: string[] = [];
  for (const part of message.parts) {
    if (part.type === "text" || part.type === "reasoning") bits.push(part.text);
    else if (part.type === "tool_call") bits.push(`${part.name}(${part.args})`);
    else if (part.type === "tool_result") bits.push(part.content);
    else bits.push(`[${part.mediaType} ${part.uri}]`);
  }
  return bits.join(" ");
}

function previewOf(text: string): string {
  // Only the start is shown: a large tool result is not rewritten whole to preview 60 characters of it.
  const line = text
    .slice(0, PREVIEW_CHARS * 8)
    .replace(/\s+/g, " ")
    .trim();
  return line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS - 1)}…` : line;
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
export function explainPlan(
  log: ThreadLog,
  plan: CompactionPlan,
  counter: MessageCounter,
  filter: ExplainFilter = {},
  reader: ReaderClearance = { clearance: "restricted", policy: "placeholder" },
): Explanation {
  const needle = filter.grep?.toLowerCase();
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
    if (filter.state !== undefined && state !== filter.state) continue;
    if (filter.id !== undefined && message.id !== filter.id) continue;
    const sensitivity = sensitivityOfMessage(message);
    const withheld = !mayRead(sensitivity, reader.clearance);
    if (withheld && reader.policy === "refuse") {
      throw new ClearanceError(
        `explain refused: message ${JSON.stringify(message.id)} is ${sensitivity}, above the reader's clearance ${reader.clearance}; raise the clearance, or use aboveClearance "placeholder" to list it without its content`,
        { threadId: log.threadId, messageId: message.id },
      );
    }
    // A withheld message is searched by its stub only: "where did X go?" must not tell that X is in it.
    const text = withheld ? withheldText(sensitivity) : contentText(message);
    if (needle !== undefined && !text.toLowerCase().includes(needle)) continue;
    rows.push({
      seq,
      id: message.id,
      role: message.role,
      state,
      tokens,
      ...(decision === undefined
        ? {}
        : { strategy: decision.action.strategy, reason: decision.action.reason }),
      preview: previewOf(text),
      ...(withheld ? { withheld: sensitivity } : {}),
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
  const header = `${"seq".padStart(13)}  ${cell("id", idWidth)}  ${cell("role", 9)}  ${cell("state", 12)}  ${"tokens".padStart(7)}  ${cell("content", PREVIEW_CHARS)}  strategy: reason`;
  const lines: string[] = [header];
  // Runs of three or more neighbours with the same state and the same action's reason are one line.
  for (let i = 0; i < rows.length; ) {
    const r = rows[i]!;
    let j = i + 1;
    while (j < rows.length && sameCause(rows[j]!, r) && rows[j]!.seq === rows[j - 1]!.seq + 1) j++;
    const why = r.strategy === undefined ? "-" : `${r.strategy}: ${r.reason ?? ""}`;
    if (j - i >= 3 && r.strategy !== undefined) {
      const run = rows.slice(i, j);
      const tokens = run.reduce((n, x) => n + x.tokens, 0);
      const seqs = `${r.seq}-${rows[j - 1]!.seq}`;
      const what = `${r.id} +${j - i - 1} more`;
      lines.push(
        `${seqs.padStart(13)}  ${cell(what, idWidth + 11)}  ${cell(r.state, 12)}  ${String(tokens).padStart(7)}  ${cell(r.preview, PREVIEW_CHARS)}  ${why}`,
      );
    } else {
      for (const x of rows.slice(i, j)) {
        const xWhy = x.strategy === undefined ? "-" : `${x.strategy}: ${x.reason ?? ""}`;
        lines.push(
          `${String(x.seq).padStart(13)}  ${cell(x.id, idWidth)}  ${cell(x.role, 9)}  ${cell(x.state, 12)}  ${String(x.tokens).padStart(7)}  ${cell(x.preview, PREVIEW_CHARS)}  ${xWhy}`,
        );
      }
    }
    i = j;
  }
  return lines;
}

function sameCause(a: ExplainRow, b: ExplainRow): boolean {
  return a.state === b.state && a.strategy === b.strategy && a.reason === b.reason;
}

/** `kept 20 (1234 tokens), cleared 9 (310 tokens)`: the states that occur, with their messages and tokens. */
export function describeTotals(explanation: Explanation): string {
  const parts = Object.entries(explanation.totals)
    .filter(([, t]) => t.messages > 0)
    .map(([state, t]) => `${state} ${t.messages} (${t.tokens} tokens)`);
  return parts.join(", ") || "no messages";
}
