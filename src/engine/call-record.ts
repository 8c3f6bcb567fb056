import { z } from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { firstSpanId } from "../plan/plan-checkpoint.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import type { Injection, PendingCallMode, RehydratedArtifact } from "../render/render-prompt.js";
import type { ArtifactStore } from "../stores/artifact-store.js";

/** References to what a plan applied to a log: summaries and evictions in force, for the call record. */
export interface AppliedRefs {
  /** Per summary in force: its span hash (or `summary:<first id>+<n>` when it has none). */
  readonly summaries: ReadonlyArray<string>;
  /** Per drop in force `drop:<first id>+<n>`, per externalization `externalize:<artifact id>`. */
  readonly evictions: ReadonlyArray<string>;
}

/** Lists the summaries and evictions a plan has in force on a log (actions that govern at least one message). */
export function appliedRefs(log: ThreadLog, plan: CompactionPlan): AppliedRefs {
  // Resolution keeps the counts as it goes, so a turn does not sweep the whole log to list what is in force.
  const { decisions, governed } = resolveForLog(plan, log);
  const summaries: string[] = [];
  const evictions: string[] = [];
  decisions.forEach(({ action }, i) => {
    const n = governed[i]!;
    if (n === 0) return;
    const first = firstSpanId(action) ?? "";
    if (action.kind === "summarize") summaries.push(action.record.spanHash ?? `summary:${first}+${n}`);
    else if (action.kind === "drop") evictions.push(`drop:${first}+${n}`);
    else if (action.kind === "externalize") evictions.push(`externalize:${action.record.artifactId}`);
  });
  return { summaries, evictions };
}

/** What a turn rendered beyond log + plan, kept so a replay renders exactly the same request. */
export interface TurnInputs {
  readonly injections: ReadonlyArray<Injection>;
  readonly rehydrated: ReadonlyArray<RehydratedArtifact>;
  readonly pendingCalls: PendingCallMode;
}

const turnInputsSchema = z.strictObject({
  injections: z.array(z.strictObject({ text: z.string(), role: z.enum(["user", "system"]).exactOptional() })),
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
