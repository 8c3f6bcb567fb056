import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { finalStates } from "../plan/final-states.js";
import { firstSpanId } from "../plan/first-span-id.js";
import type { Injection, PendingCallMode, RehydratedArtifact } from "../render/render-prompt.js";
import type { ArtifactStore } from "../stores/artifact-store.js";

/**
 * References to what a plan applied to a log, for the call record. Each names one action in force and ends in
 * `+<n>`: the messages it governs after precedence, as `compact`, `explain`, `diff` and the summary header count
 * them; with the messages the record does not name (kept), they add up to the call's log length.
 */
export interface AppliedRefs {
  /** Per summary in force: `<span hash>+<n>` (or `summary:<first id>+<n>` when it has no span hash). */
  readonly summaries: ReadonlyArray<string>;
  /**
   * Per drop in force `drop:<first id>+<n>`, per externalization `externalize:<artifact id>+<n>`, then per clear
   * in force `clear:<first id>+<n>`. `<first id>` is the first id of the action's span, which names the action;
   * the message it names may be governed by another action (a drop over the start of a summary, say).
   */
  readonly evictions: ReadonlyArray<string>;
  /** Per summary in force, who wrote it: summarizer id, prompt version, span hash, messages it stands for. */
  readonly summarizers: ReadonlyArray<SummaryProvenance>;
}

/** Who wrote a summary in force, for the audit record ("which model, which prompt, over what"). */
export interface SummaryProvenance {
  readonly summarizerId: string;
  readonly promptVersion: string;
  readonly spanHash?: string;
  /** The messages it governs after precedence. */
  readonly messages: number;
}

/** Lists the summaries and evictions a plan has in force on a log (actions that govern at least one message). */
export function appliedRefs(log: ThreadLog, plan: CompactionPlan): AppliedRefs {
  // The final-state tallies are kept by resolution, so a turn does not sweep the whole log to list them.
  const states = finalStates(log, plan);
  const summaries: string[] = [];
  const evictions: string[] = [];
  const clears: string[] = [];
  const summarizers: SummaryProvenance[] = [];
  plan.actions.forEach((action, i) => {
    const n = states.governedBy(i);
    if (n === 0 || action.kind === "include") return;
    // The span's first id names the action (a restored span is not materialized for it); `n` is what it governs.
    const first = () => firstSpanId(action) ?? "";
    if (action.kind === "summarize") {
      const { record } = action;
      summaries.push(`${record.spanHash ?? `summary:${first()}`}+${n}`);
      summarizers.push({
        summarizerId: record.summarizerId,
        promptVersion: record.promptVersion,
        ...(record.spanHash === undefined ? {} : { spanHash: record.spanHash }),
        messages: n,
      });
    } else if (action.kind === "drop") evictions.push(`drop:${first()}+${n}`);
    else if (action.kind === "externalize") evictions.push(`externalize:${action.record.artifactId}+${n}`);
    else clears.push(`clear:${first()}+${n}`);
  });
  return { summaries, evictions: [...evictions, ...clears], summarizers };
}

/** What a turn rendered beyond log + plan, kept so a replay renders exactly the same request. */
export interface TurnInputs {
  readonly injections: ReadonlyArray<Injection>;
  readonly rehydrated: ReadonlyArray<RehydratedArtifact>;
  readonly pendingCalls: PendingCallMode;
}

const turnInputsSchema = z.strictObject({
  injections: z.array(
    z.strictObject({
      text: z.string(),
      role: z.enum(["user", "system"]).exactOptional(),
      label: z.string().exactOptional(),
    }),
  ),
  rehydrated: z.array(
    z.strictObject({ artifactId: z.string(), content: z.string(), truncated: z.boolean().exactOptional() }),
  ),
  pendingCalls: z.enum(["stub", "hold"]),
});

/** The artifact id under which a call's turn inputs are kept. */
export function turnInputsId(callId: string): string {
  return `turn-inputs:${callId}`;
}

/** Whether a turn rendered anything a replay could not rebuild from log + plan alone. */
export function hasTurnInputs(inputs: TurnInputs): boolean {
  return inputs.injections.length > 0 || inputs.rehydrated.length > 0 || inputs.pendingCalls !== "stub";
}

/** Stores a call's turn inputs as an artifact of the engine's tenant (only when there are any). */
export async function saveTurnInputs(
  artifacts: ArtifactStore,
  where: { readonly tenant: string; readonly threadId: string; readonly callId: string },
  inputs: TurnInputs,
): Promise<void> {
  if (!hasTurnInputs(inputs)) return;
  await artifacts.put({
    artifactId: turnInputsId(where.callId),
    content: JSON.stringify(inputs),
    tenant: where.tenant,
    // Injected and rehydrated content can be anything the harness had: treat it as confidential.
    sensitivity: "confidential",
    threadId: where.threadId,
  });
}

/** Reads a call's turn inputs back (the defaults when none were stored). */
export async function loadTurnInputs(
  artifacts: ArtifactStore,
  where: { readonly tenant: string; readonly callId: string },
): Promise<TurnInputs> {
  const artifact = await artifacts.get(turnInputsId(where.callId), {
    tenant: where.tenant,
    clearance: "restricted",
  });
  if (artifact === undefined) return { injections: [], rehydrated: [], pendingCalls: "stub" };
  const parsed = turnInputsSchema.safeParse(JSON.parse(artifact.content));
  if (!parsed.success) {
    throw new ValidationError(`stored turn inputs of call ${JSON.stringify(where.callId)} are malformed`, {
      field: "turnInputs",
    });
  }
  return parsed.data as TurnInputs;
}
