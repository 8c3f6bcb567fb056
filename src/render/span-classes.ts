import type { Sensitivity } from "../log/message.js";
import type { Provenance } from "./rendered-prompt.js";

// The class of a summary's or pointer's span, per provenance object: from the plan record when it says (set by
// the renderer), else found once from the span's messages (renders of one plan share their provenances).
const classes = new WeakMap<Provenance, Sensitivity>();

/** The class recorded for a synthetic message's span, if known. */
export function spanClassOf(provenance: Provenance): Sensitivity | undefined {
  return classes.get(provenance);
}

/** Records the class of a synthetic message's span. */
export function setSpanClass(provenance: Provenance, sensitivity: Sensitivity): void {
  classes.set(provenance, sensitivity);
}
