/**
 * One queue per engine and thread, shared by every framework wing in this process: a wing runs the part of a model
 * call that reads what the log holds and appends the rest through it, so two calls on one thread (two requests of a
 * chat app, agent runs in parallel, a middleware beside a `prepareStep`) never both decide that a message is new.
 * The queue is the engine's own kind (`ThreadLocks`), but not the engine's own instance: a wing's task calls the
 * engine, whose operations queue on the engine's locks, and would wait on itself there.
 */
import { ThreadLocks } from "../extend.js";
import type { ContextEngine } from "../index.js";

/** Each engine's wing queue. */
const queues = new WeakMap<ContextEngine, ThreadLocks>();

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
  let queue = queues.get(engine);
  if (queue === undefined) {
    queue = new ThreadLocks();
    queues.set(engine, queue);
  }
  return queue.run(threadId, task);
}
