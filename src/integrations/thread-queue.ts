/**
 * One queue per engine and thread, shared by every framework wing in this process: a wing runs the part of a model
 * call that reads what the log holds and appends the rest through it, so two calls on one thread (two requests of a
 * chat app, agent runs in parallel, a middleware beside a `prepareStep`) never both decide that a message is new.
 */
import type { ContextEngine } from "../index.js";

/** Each engine's queue tails by thread id; a thread's entry is removed once its queue drains. */
const tails = new WeakMap<ContextEngine, Map<string, Promise<unknown>>>();

/**
 * Runs `task` once every task queued before it on the same engine and thread has settled (failed or not).
 *
 * @example
 * await queueOnThread(engine, "t1", async () => engine.append("t1", whatTheLogLacks()));
 */
export function queueOnThread<T>(
  engine: ContextEngine,
  threadId: string,
  task: () => Promise<T>,
): Promise<T> {
  let byThread = tails.get(engine);
  if (byThread === undefined) {
    byThread = new Map();
    tails.set(engine, byThread);
  }
  const queue = byThread;
  const result = (queue.get(threadId) ?? Promise.resolve()).then(task, task);
  const tail = result.then(
    () => undefined,
    () => undefined,
  );
  queue.set(threadId, tail);
  void tail.then(() => {
    if (queue.get(threadId) === tail) queue.delete(threadId);
  });
  return result;
}
