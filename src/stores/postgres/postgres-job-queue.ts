import { createHash } from "node:crypto";
import type PgBoss from "pg-boss";
import { ValidationError } from "../../errors/ledger-error.js";
import { requirePeer } from "../../errors/optional-peer.js";
import type { DurableJobQueue, JobCounts, JobQueueSettings, QueuedJob, TakenJob } from "../job-queue.js";
import { DEFAULT_TENANT } from "../thread-tenancy.js";
import { type PgPool, quoteSchema } from "./postgres-driver.js";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The pg-boss queue (a partition of its job table) holding the default tenant's background jobs. */
export const JOB_QUEUE_NAME = "context-ledger-background";

/**
 * The queue of a tenant's jobs: each tenant's workers take only its own threads' jobs (a worker acts for one
 * tenant, and another tenant's thread is refused to it). The default tenant keeps the plain name; another's is
 * suffixed with a digest of its id (pg-boss allows letters, digits, `_` and `-` in a name).
 */
export function jobQueueNameFor(tenant: string): string {
  return tenant === DEFAULT_TENANT
    ? JOB_QUEUE_NAME
    : `${JOB_QUEUE_NAME}-${createHash("sha256").update(tenant).digest("hex").slice(0, 24)}`;
}

/** A key as a UUID (pg-boss's job id): the same key always gives the same id, which is what makes `add` idempotent. */
export function jobIdOf(key: string): string {
  const h = createHash("sha256").update(`context-ledger-job\0${key}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Runs one of pg-boss's statements. Its scripts (migrations, maintenance) are several statements in one text,
 * wrapped in BEGIN … COMMIT: one that fails leaves its connection inside an aborted transaction, so such a text
 * runs on a connection of its own, rolled back on failure before it goes back to the pool. What `pg` answers to a
 * script (a list of results) is handed to pg-boss as it is, as pg-boss's own driver does.
 */
async function executeSql(
  pool: PgPool,
  text: string,
  values?: ReadonlyArray<unknown>,
): Promise<{ rows: unknown[] }> {
  if (values !== undefined && values.length > 0) {
    return (await pool.query(text, values)) as unknown as { rows: unknown[] };
  }
  const client = await pool.connect();
  let broken = false;
  try {
    return (await client.query(text)) as unknown as { rows: unknown[] };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Runs `work` holding a session advisory lock named `name` (released when the work ends or the session dies). */
async function withLock<T>(pool: PgPool, name: string, work: () => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [name]);
    try {
      return await work();
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [name]).catch(() => {
        broken = true;
      });
    }
  } finally {
    client.release(broken);
  }
}

/** What a pg-boss job of ours carries. */
interface JobBody {
  readonly key: string;
  readonly threadId: string;
  readonly data: Readonly<Record<string, unknown>>;
}

function isBody(value: unknown): value is JobBody {
  const v = value as Partial<JobBody> | null;
  return (
    typeof v?.key === "string" &&
    typeof v.threadId === "string" &&
    typeof v.data === "object" &&
    v.data !== null
  );
}

/** pg-boss's per-job retry and expiry options from our settings (pg-boss counts whole seconds). */
function jobOptions(settings: JobQueueSettings) {
  return {
    retryLimit: settings.attempts - 1,
    retryDelay: Math.ceil(settings.retryDelayMs / 1_000),
    expireInSeconds: Math.max(1, Math.ceil(settings.visibilityTimeoutMs / 1_000)),
  };
}

/**
 * The PostgreSQL durable queue on pg-boss (docs/decisions/0020), in schema `schema` of the stores' database and on
 * their pool. pg-boss is loaded, and its schema created, on first use. Jobs of one thread run one at a time across
 * every worker: a worker holds a session advisory lock on the thread while it runs one (released by the server
 * when a worker dies, so a dead worker never blocks its thread beyond its job's visibility timeout).
 */
export function createPostgresJobQueue(
  pool: PgPool,
  schema: string,
  settings: JobQueueSettings,
  onError: (error: unknown) => void = () => {},
  queueName: string = JOB_QUEUE_NAME,
): DurableJobQueue {
  const s = quoteSchema(schema);
  if (settings.attempts < 1) throw new ValidationError("attempts must be at least 1", { field: "attempts" });
  let booted: Promise<PgBoss> | undefined;
  const workers: string[] = [];
  let stopped = false;
  const boss = (): Promise<PgBoss> => {
    booted ??= (async () => {
      const Boss = requirePeer<typeof PgBoss>("pg-boss", "the PostgreSQL job queue (jobs.runner `queue`)");
      const b = new Boss({
        db: { executeSql: (text, values) => executeSql(pool, text, values) },
        schema,
        migrate: true,
        supervise: true,
        schedule: false,
        maintenanceIntervalSeconds: Math.max(1, Math.round(settings.maintenanceIntervalMs / 1_000)),
        ...jobOptions(settings),
      });
      b.on("error", onError);
      // Workers starting together on a fresh database would race to create pg-boss's schema: one installs it
      // while holding a lock, the others then find it installed.
      await withLock(pool, `context-ledger-jobs-install:${schema}`, async () => {
        await b.start();
        await b.createQueue(queueName, {
          name: queueName,
          policy: "standard",
          ...jobOptions(settings),
        });
      });
      return b;
    })().catch((error: unknown) => {
      booted = undefined;
      throw error;
    });
    return booted;
  };

  /**
   * Runs a job holding its thread's advisory lock (tried every 100 ms until the visibility timeout, after which the
   * attempt fails and is retried). A handler still running at the visibility timeout lets the lock go: the queue
   * takes its job as lost by then, and a late result is guarded by the plan version it commits on.
   */
  async function runLocked(job: PgBoss.JobWithMetadata<unknown>, handle: (job: TakenJob) => Promise<void>) {
    if (!isBody(job.data))
      throw new ValidationError(`job ${job.id} holds no context-ledger job`, { field: "data" });
    const lockKey = `context-ledger:${job.data.threadId}`;
    const client = await pool.connect();
    let broken = false;
    try {
      const deadline = Date.now() + settings.visibilityTimeoutMs;
      for (;;) {
        const { rows } = await client.query("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", [
          lockKey,
        ]);
        if ((rows[0] as { ok?: boolean } | undefined)?.ok === true) break;
        if (Date.now() >= deadline) {
          throw new Error(
            `thread ${job.data.threadId} stayed busy with another job for the visibility timeout`,
          );
        }
        await pause(100);
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        const run = handle({ ...job.data, attempt: job.retryCount + 1, attempts: job.retryLimit + 1 });
        run.catch(() => {}); // a failure after the timeout has no one left to hear it
        const timeout = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        });
        await Promise.race([run, timeout]);
      } finally {
        clearTimeout(timer);
        await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lockKey]).catch(() => {
          broken = true;
        });
      }
    } finally {
      client.release(broken);
    }
  }

  return {
    async add(job: QueuedJob): Promise<boolean> {
      const b = await boss();
      const body: JobBody = { key: job.key, threadId: job.threadId, data: job.data };
      const id = await b.send(queueName, body, {
        id: jobIdOf(job.key),
        singletonKey: job.threadId,
        ...jobOptions(settings),
      });
      // Wake this process's idle workers rather than waiting for their next poll.
      for (const w of workers) b.notifyWorker(w);
      return id !== null;
    },
    async work(handle: (job: TakenJob) => Promise<void>): Promise<void> {
      if (stopped || workers.length > 0) return;
      const b = await boss();
      const options = {
        batchSize: 1,
        includeMetadata: true as const,
        pollingIntervalSeconds: Math.max(0.5, settings.pollIntervalMs / 1_000),
      };
      for (let i = 0; i < settings.concurrency; i++) {
        workers.push(
          await b.work<unknown>(queueName, options, async ([job]) => {
            if (job !== undefined) await runLocked(job, handle);
          }),
        );
      }
    },
    async counts(threadId?: string): Promise<JobCounts> {
      // Read-only: a database where no job was ever queued has no queue tables yet, and counting creates none.
      const exists = await pool.query("SELECT to_regclass($1) IS NOT NULL AS ok", [`${s}.archive`]);
      if ((exists.rows[0] as { ok?: boolean } | undefined)?.ok !== true)
        return { queued: 0, running: 0, failed: 0 };
      const { rows } = await pool.query(
        `SELECT state::text AS state, count(*)::int AS n FROM ${s}.job
           WHERE name = $1 AND ($2::text IS NULL OR singleton_key = $2) GROUP BY state
         UNION ALL
         SELECT 'archived_failed', count(*)::int FROM ${s}.archive
           WHERE name = $1 AND state = 'failed' AND ($2::text IS NULL OR singleton_key = $2)`,
        [queueName, threadId ?? null],
      );
      const by = new Map<string, number>();
      for (const row of rows as ReadonlyArray<{ state: string; n: number }>) by.set(row.state, row.n);
      const n = (state: string) => by.get(state) ?? 0;
      return {
        queued: n("created") + n("retry"),
        running: n("active"),
        failed: n("failed") + n("archived_failed"),
      };
    },
    async stop(timeoutMs: number): Promise<void> {
      stopped = true;
      const b = await booted?.catch(() => undefined);
      if (b === undefined) return;
      await b.stop({ graceful: true, timeout: timeoutMs, wait: true, close: false });
    },
  };
}
