import { afterEach, describe, expect, it, vi } from "vitest";
import { ThreadLocks } from "../src/extend.js";
import type { ContextEngine } from "../src/index.js";
import { queueOnThread } from "../src/integrations/thread-queue.js";

const engine = () => ({}) as ContextEngine;

/** A task that records when it starts and ends, and finishes when `release` is called. */
function gated(log: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => {
    release = resolve;
  });
  const task = async () => {
    log.push(`start ${name}`);
    await done;
    log.push(`end ${name}`);
    return name;
  };
  return { task, release };
}

describe("queueOnThread", () => {
  afterEach(() => vi.restoreAllMocks());

  it("queues on the engine's own kind of lock (ThreadLocks), one queue per engine", async () => {
    const run = vi.spyOn(ThreadLocks.prototype, "run");
    const a = engine();
    await queueOnThread(a, "t", async () => 1);
    await queueOnThread(a, "t", async () => 2);
    await queueOnThread(engine(), "t", async () => 3);
    expect(run).toHaveBeenCalledTimes(3);
    expect(run.mock.instances[0]).toBe(run.mock.instances[1]);
    expect(run.mock.instances[2]).not.toBe(run.mock.instances[0]);
  });

  it("runs one engine's tasks on a thread one at a time, in order, a failure not blocking the next", async () => {
    const log: string[] = [];
    const e = engine();
    const first = gated(log, "first");
    const p1 = queueOnThread(e, "t", first.task);
    const p2 = queueOnThread(e, "t", async () => {
      log.push("second");
      throw new Error("boom");
    });
    const p3 = queueOnThread(e, "t", async () => {
      log.push("third");
      return "third";
    });
    // Another thread and another engine do not wait.
    await queueOnThread(e, "other", async () => log.push("other thread"));
    await queueOnThread(engine(), "t", async () => log.push("other engine"));
    expect(log).toEqual(["start first", "other thread", "other engine"]);
    first.release();
    await expect(p1).resolves.toBe("first");
    await expect(p2).rejects.toThrow("boom");
    await expect(p3).resolves.toBe("third");
    expect(log).toEqual(["start first", "other thread", "other engine", "end first", "second", "third"]);
  });
});
