import type { PlanAction } from "./compaction-plan.js";

// Actions whose span is built only when first read (a plan restored from a thread checkpoint) register how to
// tell their first id without building it, so audit records name a span cheaply.
const firstIds = new WeakMap<PlanAction, () => string | undefined>();

/** The first id of an action's span (without building a lazily built span). */
export function firstSpanId(action: PlanAction): string | undefined {
  const first = firstIds.get(action);
  return first === undefined ? action.span[0] : first();
}

/** Registers how to tell the first id of an action whose span is built when first read. */
export function setFirstSpanId(action: PlanAction, first: () => string | undefined): void {
  firstIds.set(action, first);
}
