import { ThreadAccessError } from "../errors/ledger-error.js";
import { idProblem } from "../log/message-schema.js";
import type { EngineCore } from "./engine-core.js";

// Per engine, the threads its tenant was found to own: a thread's tenant never changes once claimed.
const owned = new WeakMap<EngineCore, Set<string>>();

/**
 * The engine's own check that a thread is its tenant's, before an operation reads or writes it (the stores check
 * again in their queries, so neither alone is the only guard). A thread nobody has appended to passes: the
 * operation's first append claims it. Stores without tenancy (`LogStore.access` absent) are not checked here.
 */
export async function checkThreadAccess(
  core: EngineCore,
  threadId: string,
  operation: string,
): Promise<void> {
  const access = core.stores.log.access;
  // A bad id is the operation's own to refuse (with its events); stores without tenancy are not checked here.
  if (access === undefined || idProblem(threadId) !== undefined) return;
  let known = owned.get(core);
  if (known?.has(threadId) === true) return;
  const answer = await access(threadId);
  if (answer === "denied") throw new ThreadAccessError(threadId, operation);
  if (answer !== "owner") return;
  if (known === undefined) {
    known = new Set();
    owned.set(core, known);
  }
  if (known.size >= 10_000) known.clear();
  known.add(threadId);
}
