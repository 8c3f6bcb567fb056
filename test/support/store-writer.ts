import { VersionConflictError } from "../../src/errors/ledger-error.js";
import { type CompactionPlan, createPlan } from "../../src/plan/compaction-plan.js";
import type { Stores } from "../../src/stores/stores.js";
import { batch, dropPlan, sleep } from "./store-fixtures.js";

/** What a writer reports, one JSON line each when it runs in a child process. */
export type WriterEvent =
  | { readonly type: "ready" }
  | {
      readonly type: "begin";
      readonly op: "append";
      readonly seq: number;
      readonly ids: ReadonlyArray<string>;
    }
  | { readonly type: "begin"; readonly op: "commit"; readonly version: number }
  | { readonly type: "append"; readonly seq: number; readonly ids: ReadonlyArray<string> }
  | { readonly type: "commit"; readonly version: number }
  | {
      readonly type: "conflict";
      readonly op: "append" | "commit";
      readonly name: string;
      readonly expected: number;
      readonly actual: number;
    }
  | { readonly type: "done" }
  | { readonly type: "error"; readonly message: string };

/** How one contending writer behaves. */
export interface ContendOptions {
  readonly threadId: string;
  readonly workerId: string;
  readonly appends: number;
  /** A plan commit after every this many appends. */
  readonly commitEvery: number;
  /** Batches hold 1 … batchMax messages. */
  readonly batchMax: number;
  /** Up to this many ms between reading the current state and writing, to widen the race window. */
  readonly jitterMs: number;
}

/** Retries `attempt` until it succeeds, reporting every version conflict; any other error propagates. */
async function untilWritten(
  op: "append" | "commit",
  attempt: () => Promise<void>,
  emit: (e: WriterEvent) => void,
) {
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      emit({ type: "conflict", op, name: error.name, expected: error.expected, actual: error.actual });
    }
  }
}

/**
 * Appends `appends` batches to one thread and commits a plan every `commitEvery` appends, each time from a
 * freshly read length / version, retrying on conflict: the writer a concurrency test runs several of at once.
 */
export async function contend(
  stores: Stores,
  o: ContendOptions,
  emit: (e: WriterEvent) => void,
): Promise<void> {
  const jitter = () => sleep(Math.floor(Math.random() * (o.jitterMs + 1)));
  let lastIds: ReadonlyArray<string> = [];
  let basedOnSeq = 0;
  for (let i = 0; i < o.appends; i++) {
    const ids = Array.from({ length: 1 + (i % o.batchMax) }, (_, k) => `${o.workerId}-${i}-${k}`);
    await untilWritten(
      "append",
      async () => {
        const seq = await stores.log.length(o.threadId);
        await jitter();
        await stores.log.append(o.threadId, seq, batch(seq, ids));
        emit({ type: "append", seq, ids });
        lastIds = ids;
        basedOnSeq = seq + ids.length;
      },
      emit,
    );
    if ((i + 1) % o.commitEvery !== 0) continue;
    await untilWritten(
      "commit",
      async () => {
        const latest = await stores.plans.latest(o.threadId);
        await jitter();
        const plan = dropPlan(o.threadId, latest.version + 1, basedOnSeq, lastIds, o.workerId);
        await stores.plans.commit(plan, latest.version);
        emit({ type: "commit", version: plan.version });
      },
      emit,
    );
  }
}

/**
 * Appends and commits alternately forever, announcing each write before it starts (`begin`) and after it is
 * acknowledged: the writer a crash test kills. Writes are made big (16–31 messages of 4 KB, plans carrying a
 * 256 KB summary) so that each takes a few milliseconds and a kill sent on `begin` lands inside it.
 */
export async function writeForever(
  stores: Stores,
  threadId: string,
  workerId: string,
  emit: (e: WriterEvent) => void,
): Promise<never> {
  const mine: string[] = [];
  const summary = "s".repeat(256 * 1024);
  for (let i = 0; ; i++) {
    const seq = await stores.log.length(threadId);
    const ids = Array.from({ length: 16 + (i % 16) }, (_, k) => `${workerId}-${i}-${k}`);
    emit({ type: "begin", op: "append", seq, ids });
    await stores.log.append(threadId, seq, batch(seq, ids, 4_000));
    emit({ type: "append", seq, ids });
    mine.push(...ids);
    const latest = await stores.plans.latest(threadId);
    const plan = heavyPlan(dropPlan(threadId, latest.version + 1, seq + ids.length, mine, workerId), summary);
    emit({ type: "begin", op: "commit", version: plan.version });
    await stores.plans.commit(plan, latest.version);
    emit({ type: "commit", version: plan.version });
  }
}

function heavyPlan(plan: CompactionPlan, summary: string): CompactionPlan {
  const span = plan.actions[0]!.span;
  const record = { kind: "summarize", summary, summarizerId: "test", promptVersion: "1" } as const;
  const action = { kind: "summarize", span, record, strategy: "heavy", reason: "size" } as const;
  return createPlan({ ...plan, actions: [...plan.actions, action] });
}
