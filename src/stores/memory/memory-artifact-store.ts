import { ValidationError } from "../../errors/ledger-error.js";
import {
  artifactAfterPut,
  checkReadRequest,
  freshArtifact,
  isExpired,
  visibleArtifact,
} from "../artifact-rules.js";
import type {
  Artifact,
  ArtifactInput,
  ArtifactMeta,
  ArtifactStore,
  SecurityContext,
} from "../artifact-store.js";

/** The id an artifact gets when the writer gives none (the rule every store follows). */
export { defaultArtifactId as deriveArtifactId } from "../artifact-rules.js";

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

/** The artifacts of one store, keyed by tenant and id, with the clock that decides expiry. */
class ArtifactTable {
  readonly #entries = new Map<string, Artifact>();

  constructor(readonly now: () => number) {}

  get size(): number {
    return this.#entries.size;
  }

  put(raw: ArtifactInput): ArtifactMeta {
    const nowMs = this.now();
    const fresh = freshArtifact(raw, nowMs);
    const key = keyOf(fresh.meta.tenant, fresh.meta.artifactId);
    const stored = artifactAfterPut(this.#live(key, nowMs), fresh, nowMs);
    this.#entries.set(key, stored);
    return stored.meta;
  }

  read(artifactId: string, context: SecurityContext): Artifact | undefined {
    const who = checkReadRequest(artifactId, context);
    const nowMs = this.now();
    // The tenant is part of the key: another tenant's artifact is simply not there (its existence never leaks).
    return visibleArtifact(this.#live(keyOf(who.tenant, artifactId), nowMs), who, nowMs);
  }

  /** Deletes an artifact the caller may read; true when it was there. */
  delete(artifactId: string, context: SecurityContext): boolean {
    const who = checkReadRequest(artifactId, context);
    if (this.read(artifactId, context) === undefined) return false;
    return this.#entries.delete(keyOf(who.tenant, artifactId));
  }

  /** The live artifact under a key; an expired one is removed on sight. */
  #live(key: string, nowMs: number): Artifact | undefined {
    const artifact = this.#entries.get(key);
    if (artifact !== undefined && isExpired(artifact.meta, nowMs)) {
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
    delete: (artifactId: string, context: SecurityContext) =>
      attempt(() => table.delete(artifactId, context)),
    get size() {
      return table.size;
    },
  });
}
