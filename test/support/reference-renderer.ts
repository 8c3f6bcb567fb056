/**
 * A naive reference renderer, written from the rules in DESIGN.md ("render") and the doc comment of
 * `renderPrompt`, independently of `src/render/render-prompt.ts`. It favours obviousness over speed: every
 * question is answered by scanning the whole log or the whole plan again (O(n²) and worse is fine here).
 *
 * Only the placeholder TEXTS are shared with production (`placeholders.ts` defines the format); the traversal,
 * the precedence resolution and the call/result pairing are computed here from scratch.
 */
import type { Message, Part, Role } from "../../src/log/message.js";
import type { ThreadLog } from "../../src/log/thread-log.js";
import type { ActionKind, CompactionPlan, PlanAction } from "../../src/plan/compaction-plan.js";
import type { Injection, PendingCallMode, RehydratedArtifact } from "../../src/render/render-prompt.js";
import type { RenderedKind } from "../../src/render/rendered-prompt.js";
import {
  clearMessage,
  droppedText,
  pendingResultText,
  pointerText,
  summaryText,
} from "../../src/texts/placeholders.js";

/** One message of the reference output. */
export interface ReferenceMessage {
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
  readonly provenance: {
    readonly kind: RenderedKind;
    readonly sourceIds: ReadonlyArray<string>;
    readonly synthetic: boolean;
  };
}

/** Options of the reference renderer (the subset of `RenderOptions` that shapes the messages). */
export interface ReferenceOptions {
  readonly pendingCalls?: PendingCallMode;
  readonly injections?: ReadonlyArray<Injection>;
  readonly rehydrated?: ReadonlyArray<RehydratedArtifact>;
}

/** Precedence written out as an ordered list: later in the list wins. */
const PRECEDENCE_ORDER: ReadonlyArray<ActionKind> = ["include", "clear", "summarize", "externalize", "drop"];

/** Index of the action governing a message id (highest precedence, later among equals), or -1 for include. */
export function referenceGoverningAction(plan: CompactionPlan, messageId: string): number {
  let best = -1;
  for (let i = 0; i < plan.actions.length; i++) {
    const action = plan.actions[i]!;
    if (!action.span.includes(messageId)) continue;
    if (best === -1) {
      best = i;
      continue;
    }
    const rankNew = PRECEDENCE_ORDER.indexOf(action.kind);
    const rankOld = PRECEDENCE_ORDER.indexOf(plan.actions[best]!.kind);
    if (rankNew >= rankOld) best = i; // ">=": among equals the later action wins
  }
  return best;
}

/** Where a part is: message index (= seq) and part index. */
interface PartAt {
  readonly message: number;
  readonly part: number;
}

/**
 * Pairs every tool result with the nearest earlier unanswered call with the same id, by scanning backwards.
 * Returns, for each call part, its result (or undefined when the call is pending).
 */
function pairCalls(messages: ReadonlyArray<Message>): Map<string, PartAt> {
  const resultOfCall = new Map<string, PartAt>();
  const key = (at: PartAt) => `${at.message}:${at.part}`;
  messages.forEach((m, mi) => {
    m.parts.forEach((p, pi) => {
      if (p.type !== "tool_result") return;
      for (let cm = mi - 1; cm >= 0; cm--) {
        const callMessage = messages[cm]!;
        let found = false;
        for (let cp = callMessage.parts.length - 1; cp >= 0; cp--) {
          const c = callMessage.parts[cp]!;
          if (
            c.type === "tool_call" &&
            c.callId === p.callId &&
            !resultOfCall.has(key({ message: cm, part: cp }))
          ) {
            resultOfCall.set(key({ message: cm, part: cp }), { message: mi, part: pi });
            found = true;
            break;
          }
        }
        if (found) break;
      }
    });
  });
  return resultOfCall;
}

/** Renders log + plan the slow, obvious way. The plan is assumed valid (the test checks that separately). */
export function referenceRender(
  log: ThreadLog,
  plan: CompactionPlan,
  options: ReferenceOptions = {},
): ReferenceMessage[] {
  const mode = options.pendingCalls ?? "stub";
  const messages = log.messages;
  const governing = messages.map((m) => referenceGoverningAction(plan, m.id));
  const kindAt = (i: number): ActionKind => {
    const a = governing[i]!;
    return a === -1 ? "include" : plan.actions[a]!.kind;
  };
  const resultOfCall = pairCalls(messages);
  const callOfResult = new Map<string, PartAt>();
  for (const [callKey, result] of resultOfCall) {
    const [m, p] = callKey.split(":").map(Number);
    callOfResult.set(`${result.message}:${result.part}`, { message: m!, part: p! });
  }
  const isPendingCall = (mi: number, pi: number): boolean =>
    messages[mi]!.parts[pi]!.type === "tool_call" && !resultOfCall.has(`${mi}:${pi}`);

  /** The tool name a result part answers, through the pairing. */
  const nameOfCallAnswered = (mi: number, callId: string): string => {
    const m = messages[mi]!;
    for (let pi = 0; pi < m.parts.length; pi++) {
      const p = m.parts[pi]!;
      if (p.type !== "tool_result" || p.callId !== callId) continue;
      const call = callOfResult.get(`${mi}:${pi}`)!;
      const c = messages[call.message]!.parts[call.part]!;
      if (c.type === "tool_call") return c.name;
    }
    throw new Error(`reference: no paired call for ${callId} in message ${m.id}`);
  };

  /** A log message (or a subset of its parts) as its governing action renders it. */
  const copy = (mi: number, parts: ReadonlyArray<Part>): ReferenceMessage => {
    const m = messages[mi]!;
    const a = governing[mi]!;
    const action: PlanAction | undefined = a === -1 ? undefined : plan.actions[a];
    if (action !== undefined && action.kind === "clear") {
      const cleared = clearMessage(m, action.record, (part) => nameOfCallAnswered(mi, part.callId), parts);
      return {
        role: m.role,
        parts: cleared,
        provenance: { kind: "cleared", sourceIds: [m.id], synthetic: false },
      };
    }
    return { role: m.role, parts, provenance: { kind: "original", sourceIds: [m.id], synthetic: false } };
  };

  const out: ReferenceMessage[] = [];
  const emittedResults = new Set<string>();
  const emittedSynthetic = new Set<number>();

  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const kind = kindAt(i);
    if (kind === "drop") {
      // A maximal run of dropped messages leaves one marker where it begins when the drop governing its first
      // message asks for one.
      const first = i === 0 || kindAt(i - 1) !== "drop";
      const action = plan.actions[governing[i]!]!;
      if (!first || action.kind !== "drop" || action.record.marker !== true) continue;
      const run: string[] = [];
      for (let j = i; j < messages.length && kindAt(j) === "drop"; j++) run.push(messages[j]!.id);
      out.push({
        role: "assistant",
        parts: [{ type: "text", text: droppedText(run.length) }],
        provenance: { kind: "drop_marker", sourceIds: run, synthetic: true },
      });
      continue;
    }
    if (kind === "summarize" || kind === "externalize") {
      const a = governing[i]!;
      if (emittedSynthetic.has(a)) continue;
      emittedSynthetic.add(a);
      const won = messages.filter((_, j) => governing[j] === a).map((x) => x.id);
      const action = plan.actions[a]!;
      let text = "";
      if (action.kind === "summarize") text = summaryText(action.record, won.length);
      if (action.kind === "externalize") text = pointerText(action.record, won.length);
      out.push({
        role: "assistant",
        parts: [{ type: "text", text }],
        provenance: { kind: kind === "summarize" ? "summary" : "pointer", sourceIds: won, synthetic: true },
      });
      continue;
    }
    if (m.role === "tool") {
      // Results are emitted right after their call; whatever is left here would be an orphan.
      const left = m.parts.filter((_, pi) => !emittedResults.has(`${i}:${pi}`));
      if (left.length > 0) throw new Error(`reference: results of ${m.id} were not placed after their call`);
      continue;
    }
    let parts: ReadonlyArray<Part> = m.parts;
    if (mode === "hold") {
      parts = m.parts.filter((_, pi) => !isPendingCall(i, pi));
    }
    const heldAway = parts.length === 0 && m.parts.length > 0;
    // A clear listing every part of a reasoning-only message leaves nothing to send.
    if (!heldAway && (parts.length === 0 || copy(i, parts).parts.length > 0)) out.push(copy(i, parts));
    if (!m.parts.some((p) => p.type === "tool_call")) continue;

    // the results of this message's calls, one rendered message per tool message, in log order
    for (let j = i + 1; j < messages.length; j++) {
      const answering: Part[] = [];
      messages[j]!.parts.forEach((p, pj) => {
        const call = callOfResult.get(`${j}:${pj}`);
        if (call !== undefined && call.message === i) {
          answering.push(p);
          emittedResults.add(`${j}:${pj}`);
        }
      });
      if (answering.length > 0) out.push(copy(j, answering));
    }
    if (mode === "stub") {
      const stubs: Part[] = [];
      m.parts.forEach((p, pi) => {
        if (p.type === "tool_call" && isPendingCall(i, pi)) {
          stubs.push({ type: "tool_result", callId: p.callId, content: pendingResultText(p.name) });
        }
      });
      if (stubs.length > 0) {
        out.push({
          role: "tool",
          parts: stubs,
          provenance: { kind: "pending_stub", sourceIds: [], synthetic: true },
        });
      }
    }
  }

  for (const artifact of options.rehydrated ?? []) {
    // The rehydration wrapper text is defined inline in render-prompt.ts (not in placeholders.ts).
    const note = artifact.truncated === true ? " (truncated)" : "";
    out.push({
      role: "user",
      parts: [
        { type: "text", text: `[Rehydrated artifact ${artifact.artifactId}${note}]\n${artifact.content}` },
      ],
      provenance: { kind: "rehydration", sourceIds: [], synthetic: true },
    });
  }
  for (const injection of options.injections ?? []) {
    out.push({
      role: injection.role ?? "user",
      parts: [{ type: "text", text: injection.text }],
      provenance: { kind: "injection", sourceIds: [], synthetic: true },
    });
  }
  return out;
}
