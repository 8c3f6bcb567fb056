import type { Sensitivity } from "../log/message.js";
import type { Provenance } from "./rendered-prompt.js";

// Per provenance object of a summary or pointer (renders of one plan share their provenances): the class its plan
// record names (set by the renderer), and the class found once from the record and the span's messages together.
const recorded = new WeakMap<Provenance, Sensitivity>();
const resolved = new WeakMap<Provenance, Sensitivity>();

/** The class a synthetic message's plan record names, if any: a floor for its span's class, never a ceiling. */
export function recordedClassOf(provenance: Provenance): Sensitivity | undefined {
  return recorded.get(provenance);
}

/** Notes the class a synthetic message's plan record names. */
export function setRecordedClass(provenance: Provenance, sensitivity: Sensitivity): void {
  recorded.set(provenance, sensitivity);
}

/** The class found for a synthetic message's span, if known. */
export function spanClassOf(provenance: Provenance): Sensitivity | undefined {
  return resolved.get(provenance);
}

/** Records the class found for a synthetic message's span. */
export function setSpanClass(provenance: Provenance, sensitivity: Sensitivity): void {
  resolved.set(provenance, sensitivity);
}
