import { z } from "zod";
import { AccessDeniedError, ValidationError } from "../../errors/ledger-error.js";
import { canonicalJson, sha256Hex } from "../../log/canonical-json.js";
import { deepFreeze } from "../../log/deep-freeze.js";
import type { Sensitivity } from "../../log/message.js";
import {
  type Artifact,
  type ArtifactInput,
  type ArtifactMeta,
  type ArtifactStore,
  mayRead,
  type SecurityContext,
} from "../artifact-store.js";
import { checkValue } from "../store-row-schemas.js";

/** Options of `createMemoryArtifactStore`. */
export interface MemoryArtifactStoreOptions {
  /** The clock, in epoch milliseconds (default `Date.now`); tests pass a fake one. */
  readonly now?: () => number;
}

/** The in-memory artifact store, with its size for tests. */
export interface MemoryArtifactStore extends ArtifactStore {
  /** Artifacts currently held, expired ones not yet noticed included. */
  readonly size: number;
}

const sensitivitySchema = z.enum(["public", "internal", "confidential", "restricted"]);

const artifactInputSchema = z.object({
  content: z.string(),
  tenant: z.string().min(1),
  sensitivity: sensitivitySchema.optional(),
  threadId: z.string().min(1).optional(),
  sourceIds: z.array(z.string().min(1)).optional(),
  ttlMs: z.number().positive().optional(),
  artifactId: z.string().min(1).optional(),
});

const securityContextSchema = z.object({
  tenant: z.string().min(1),
  clearance: sensitivitySchema.optional(),
});

/**
 * The id an artifact gets when the writer gives none: derived from the tenant and the content hash, so writing
 * the same content twice (a rerun, a retry) yields the same artifact, and two tenants never share one.
 */
export function deriveArtifactId(tenant: string, contentHash: string): string {
  return `art_${sha256Hex(canonicalJson([tenant, contentHash])).slice(0, 32)}`;
}

/** The stricter of two sensitivity classes. */
function stricter(a: Sensitivity, b: Sensitivity): Sensitivity {
  return mayRead(a, b) ? b : a;
}

/** The later of two expiry times; absent (never expires) is later than any time. */
function later(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined || b === undefined) return undefined;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

function buildMeta(
  input: z.output<typeof artifactInputSchema>,
  contentHash: string,
  nowMs: number,
): ArtifactMeta {
  const artifactId = input.artifactId ?? deriveArtifactId(input.tenant, contentHash);
  return deepFreeze({
    artifactId,
    tenant: input.tenant,
    sensitivity: input.sensitivity ?? "internal",
    ...(input.threadId === undefined ? {} : { threadId: input.threadId }),
    ...(input.sourceIds === undefined ? {} : { sourceIds: [...input.sourceIds] }),
    sizeChars: input.content.length,
    contentHash,
    createdAt: new Date(nowMs).toISOString(),
    ...(input.ttlMs === undefined ? {} : { expiresAt: new Date(nowMs + input.ttlMs).toISOString() }),
  });
}

/**
 * Writing content that is already stored under the same id keeps the first artifact (its id, creation time and
 * sources), but never weakens it: the stricter sensitivity and the later expiry win. Returns the same object when
 * nothing changes.
 */
function merge(existing: Artifact, fresh: ArtifactMeta): Artifact {
  const sensitivity = stricter(existing.meta.sensitivity, fresh.sensitivity);
  const expiresAt = later(existing.meta.expiresAt, fresh.expiresAt);
  if (sensitivity === existing.meta.sensitivity && expiresAt === existing.meta.expiresAt) return existing;
  const { expiresAt: _old, ...rest } = existing.meta;
  const meta = deepFreeze({ ...rest, sensitivity, ...(expiresAt === undefined ? {} : { expiresAt }) });
  return Object.freeze({ meta, content: existing.content });
}

/** The artifacts of one store, keyed by tenant and id, with the clock that decides expiry. */
class ArtifactTable {
  readonly #entries = new Map<string, Artifact>();

  constructor(readonly now: () => number) {}

  get size(): number {
    return this.#entries.size;
  }

  put(raw: ArtifactInput): ArtifactMeta {
    const input = checkValue(artifactInputSchema, raw, { what: "artifact input" });
    const nowMs = this.now();
    const fresh = buildMeta(input, sha256Hex(input.content), nowMs);
    const key = keyOf(input.tenant, fresh.artifactId);
    const existing = this.#live(key, nowMs);
    if (existing !== undefined && existing.meta.contentHash !== fresh.contentHash) {
      throw new ValidationError(
        `artifact ${fresh.artifactId} already holds different content; artifacts are immutable, store the new content under another id`,
        { field: "artifactId", ...(input.threadId === undefined ? {} : { threadId: input.threadId }) },
      );
    }
    const stored =
      existing === undefined
        ? Object.freeze({ meta: fresh, content: input.content })
        : merge(existing, fresh);
    this.#entries.set(key, stored);
    return stored.meta;
  }

  read(artifactId: string, context: SecurityContext): Artifact | undefined {
    if (typeof artifactId !== "string" || artifactId.length === 0) {
      throw new ValidationError("artifact id must be a non-empty string", { field: "artifactId" });
    }
    const who = checkValue(securityContextSchema, context, { what: "security context" });
    // The tenant is part of the key: another tenant's artifact is simply not there (its existence never leaks).
    const artifact = this.#live(keyOf(who.tenant, artifactId), this.now());
    if (artifact === undefined) return undefined;
    if (!mayRead(artifact.meta.sensitivity, who.clearance)) {
      throw new AccessDeniedError(
        `artifact ${artifactId} is ${artifact.meta.sensitivity}; a caller with clearance ${who.clearance ?? "internal"} may not read it`,
        artifact.meta.threadId === undefined ? {} : { threadId: artifact.meta.threadId },
      );
    }
    return artifact;
  }

  /** The live artifact under a key; an expired one is removed on sight. */
  #live(key: string, nowMs: number): Artifact | undefined {
    const artifact = this.#entries.get(key);
    if (artifact?.meta.expiresAt !== undefined && nowMs >= Date.parse(artifact.meta.expiresAt)) {
      this.#entries.delete(key);
      return undefined;
    }
    return artifact;
  }
}

function keyOf(tenant: string, artifactId: string): string {
  return `${tenant}\u0000${artifactId}`;
}

// Errors reject the returned promise rather than throwing synchronously, as a real backend's would.
function attempt<T>(run: () => T): Promise<T> {
  return new Promise((resolve) => resolve(run()));
}

/**
 * An in-memory `ArtifactStore`. Tenants are separate namespaces: another tenant's artifact reads as not found,
 * even under the same id. Ids default to a hash of tenant + content, so puts are idempotent; an id already
 * holding different content is refused (artifacts are immutable: plans point at them). Expired artifacts read as
 * not found and are removed; everything handed out is frozen.
 *
 * @example
 * const store = createMemoryArtifactStore();
 * const meta = await store.put({ content: bigResult, tenant: "acme", ttlMs: 86_400_000 });
 * const artifact = await store.get(meta.artifactId, { tenant: "acme", clearance: "internal" });
 */
export function createMemoryArtifactStore(options: MemoryArtifactStoreOptions = {}): MemoryArtifactStore {
  const now = options.now ?? Date.now;
  if (typeof now !== "function") {
    throw new ValidationError("now must be a function returning epoch milliseconds", { field: "now" });
  }
  const table = new ArtifactTable(now);
  return Object.freeze({
    put: (input: ArtifactInput) => attempt(() => table.put(input)),
    get: (artifactId: string, context: SecurityContext) => attempt(() => table.read(artifactId, context)),
    head: (artifactId: string, context: SecurityContext) =>
      attempt(() => table.read(artifactId, context)?.meta),
    get size() {
      return table.size;
    },
  });
}
