import { NotFoundError, ThreadAccessError, ValidationError } from "../errors/ledger-error.js";
import { idProblem } from "../log/message-schema.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import type { ModelCallRecord, ModelCallStore } from "./model-call-store.js";
import type { PlanStore } from "./plan-store.js";

/**
 * The tenant of stores and engines that name none, and of every thread stored before threads had tenants: a
 * single-tenant deployment never names one and sees all of its threads as before.
 */
export const DEFAULT_TENANT = "default";

/**
 * What a tenant-bound log store says of a thread for its tenant: `owner` (the tenant's own), `unclaimed` (no
 * message yet: the first append claims it) or `denied` (another tenant's; which one is never said).
 */
export type ThreadAccess = "owner" | "unclaimed" | "denied";

/** The answer of `ThreadAccess` for a thread stored under `owner` (undefined: unclaimed), read by `tenant`. */
export function accessOf(owner: string | undefined, tenant: string): ThreadAccess {
  if (owner === undefined || owner === null) return "unclaimed";
  return owner === tenant ? "owner" : "denied";
}

/** Throws `ValidationError` unless `tenant` is an id every backend can store (the rules of thread ids). */
export function checkTenant(tenant: string): string {
  const problem = idProblem(tenant);
  if (problem !== undefined) throw new ValidationError(`tenant ${problem}`, { field: "tenant" });
  return tenant;
}

/** Throws `ThreadAccessError` when `access` is `denied`: the caller's tenant does not own the thread. */
export function assertAccess(access: ThreadAccess, threadId: string, operation: string): void {
  if (access === "denied") throw new ThreadAccessError(threadId, operation);
}

/**
 * Throws `NotFoundError`: a plan, model call or checkpoint written for a thread nobody has appended to would
 * belong to whichever tenant appends first.
 */
function refuseUnclaimed(threadId: string, operation: string): never {
  throw new NotFoundError(
    `${operation} refused: thread ${JSON.stringify(threadId)} has no messages yet; append its first message (which makes the thread this tenant's) before writing a plan, model call or checkpoint for it`,
    { threadId },
  );
}

/** The thread stores a tenant-bound bundle guards with an ownership check (the log store filters by itself). */
export interface GuardedThreadStores {
  readonly plans: PlanStore;
  readonly calls: ModelCallStore;
  readonly checkpoints?: CheckpointStore;
}

/**
 * Binds plans, model calls and checkpoints to a tenant: every operation on a thread first asks `access` (the
 * bound log store's, one keyed read) and refuses another tenant's thread with `ThreadAccessError`; a model call
 * read by id is refused when its thread is another tenant's. A thread nobody has appended to reads as empty to
 * any tenant, and takes no write (a plan, call or checkpoint of a thread without messages has no use): its first
 * append decides whose it is. Only the unbound stores pass `unclaimedWrites: "allow"`: a single-tenant
 * deployment has no other tenant to claim what they write (a multi-tenant one writes through bound stores).
 * Calibration reads (`listWithUsage`) keep the tenant's own threads' calls.
 */
export function guardThreadStores(
  stores: GuardedThreadStores,
  access: (threadId: string) => Promise<ThreadAccess>,
  options: { readonly unclaimedWrites?: "refuse" | "allow" } = {},
): GuardedThreadStores {
  const refuseWrites = options.unclaimedWrites !== "allow";
  // A thread's tenant never changes once claimed, so an `owner` answer is kept (a bounded set) and asked once.
  const owned = new Set<string>();
  const check = async (threadId: string, operation: string, write = false): Promise<void> => {
    // Bad ids are the inner store's to reject, with its own ValidationError.
    if (typeof threadId !== "string" || idProblem(threadId) !== undefined || owned.has(threadId)) return;
    const answer = await access(threadId);
    assertAccess(answer, threadId, operation);
    // A write to a thread nobody owns yet would land in the thread of whichever tenant appends first.
    if (write && refuseWrites && answer === "unclaimed") refuseUnclaimed(threadId, operation);
    if (answer === "owner") {
      if (owned.size >= 10_000) owned.clear();
      owned.add(threadId);
    }
  };
  const { plans, calls, checkpoints } = stores;
  const guardedPlans = Object.freeze<PlanStore>({
    commit: async (plan, expectedVersion, options) => {
      await check(plan?.threadId, "committing a plan", true);
      return plans.commit(plan, expectedVersion, options);
    },
    latest: async (threadId) => {
      await check(threadId, "reading the plan");
      return plans.latest(threadId);
    },
    get: async (threadId, version) => {
      await check(threadId, "reading a plan version");
      return plans.get(threadId, version);
    },
    versions: async (threadId) => {
      await check(threadId, "listing plan versions");
      return plans.versions(threadId);
    },
    ...(plans.latestVersion === undefined
      ? {}
      : {
          latestVersion: async (threadId: string) => {
            await check(threadId, "reading the plan version");
            return plans.latestVersion!(threadId);
          },
        }),
    ...(plans.adopt === undefined
      ? {}
      : {
          adopt: async (plan: Parameters<NonNullable<PlanStore["adopt"]>>[0]) => {
            await check(plan?.threadId, "adopting a plan", true);
            return plans.adopt!(plan);
          },
        }),
    ...(plans.chainHead === undefined
      ? {}
      : {
          chainHead: async (threadId: string, version: number) => {
            await check(threadId, "reading the plan chain");
            return plans.chainHead!(threadId, version);
          },
        }),
    ...(plans.chainRows === undefined
      ? {}
      : {
          chainRows: async (threadId: string, toVersion: number) => {
            await check(threadId, "reading the plan chain");
            return plans.chainRows!(threadId, toVersion);
          },
        }),
  });
  const readCall = async (callId: string) => {
    const record = await calls.get(callId);
    if (record !== undefined) await check(record.threadId, `reading model call ${JSON.stringify(callId)}`);
    return record;
  };
  const guardedCalls = Object.freeze<ModelCallStore>({
    record: async (record) => {
      await check(record?.threadId, "recording a model call", true);
      return calls.record(record);
    },
    get: readCall,
    setUsage: async (callId, usage) => {
      await readCall(callId);
      return calls.setUsage(callId, usage);
    },
    list: async (threadId) => {
      await check(threadId, "listing model calls");
      return calls.list(threadId);
    },
    ...(calls.recent === undefined
      ? {}
      : {
          recent: async (threadId: string, limit: number) => {
            await check(threadId, "listing model calls");
            return calls.recent!(threadId, limit);
          },
        }),
    // Calibration learns from the tenant's own calls only: another tenant's usage (inflated or not) must not
    // move this tenant's budgets. Filtered after the read, so fewer than `limit` may come back.
    listWithUsage: async (model, limit) => {
      const records = await calls.listWithUsage(model, limit);
      const allowed = new Map<string, boolean>();
      const out: ModelCallRecord[] = [];
      for (const record of records) {
        let mine = allowed.get(record.threadId);
        if (mine === undefined) {
          // A thread nobody has appended to is nobody's yet: its calls count for every tenant, as it reads.
          mine = owned.has(record.threadId) || (await access(record.threadId)) !== "denied";
          allowed.set(record.threadId, mine);
        }
        if (mine) out.push(record);
      }
      return Object.freeze(out);
    },
  });
  const guardedCheckpoints: CheckpointStore | undefined =
    checkpoints === undefined
      ? undefined
      : Object.freeze<CheckpointStore>({
          put: async (checkpoint) => {
            await check(checkpoint?.threadId, "writing a checkpoint", true);
            return checkpoints.put(checkpoint);
          },
          putExtending: async (checkpoint, base) => {
            await check(checkpoint?.threadId, "writing a checkpoint", true);
            return checkpoints.putExtending(checkpoint, base);
          },
          latest: async (threadId, planVersion, maxLogLength) => {
            await check(threadId, "reading a checkpoint");
            return checkpoints.latest(threadId, planVersion, maxLogLength);
          },
          tail: async (threadId, planVersion, logLength) => {
            await check(threadId, "reading a checkpoint");
            return checkpoints.tail(threadId, planVersion, logLength);
          },
        });
  return Object.freeze({
    plans: guardedPlans,
    calls: guardedCalls,
    ...(guardedCheckpoints === undefined ? {} : { checkpoints: guardedCheckpoints }),
  });
}
