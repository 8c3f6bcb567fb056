import type { Sensitivity } from "../log/message.js";

/** Who is reading or writing: every artifact read is checked against it. */
export interface SecurityContext {
  readonly tenant: string;
  /** The most sensitive class this caller may read (default `internal`). */
  readonly clearance?: Sensitivity;
}

/** What is stored beside an artifact's content. */
export interface ArtifactMeta {
  readonly artifactId: string;
  readonly tenant: string;
  readonly sensitivity: Sensitivity;
  readonly threadId?: string;
  /** Log message ids the content came from. */
  readonly sourceIds?: ReadonlyArray<string>;
  /** Characters of the content. */
  readonly sizeChars: number;
  /** sha256 of the content. */
  readonly contentHash: string;
  /** ISO time of the write. */
  readonly createdAt: string;
  /** ISO time after which the artifact is gone; absent means it never expires. */
  readonly expiresAt?: string;
}

/** An artifact as read back. */
export interface Artifact {
  readonly meta: ArtifactMeta;
  readonly content: string;
}

/** What `put` needs; the store fills in size, hash and times. */
export interface ArtifactInput {
  readonly content: string;
  readonly tenant: string;
  /** Default `internal`. */
  readonly sensitivity?: Sensitivity;
  readonly threadId?: string;
  readonly sourceIds?: ReadonlyArray<string>;
  /** Time to live in milliseconds; absent means no expiry. */
  readonly ttlMs?: number;
  /** Give the id yourself (idempotent puts); by default it is derived from tenant + content hash. */
  readonly artifactId?: string;
}

/**
 * Holds content moved out of the prompt (externalized tool results, documents). Every read checks the
 * caller's security context: another tenant's artifact reads as not found, and content more sensitive than the
 * caller's clearance raises `AccessDeniedError`. Expired artifacts read as not found.
 *
 * @example
 * const store = createMemoryArtifactStore();
 * const meta = await store.put({ content: bigResult, tenant: "acme", sensitivity: "internal" });
 * const artifact = await store.get(meta.artifactId, { tenant: "acme" });
 */
export interface ArtifactStore {
  put(input: ArtifactInput): Promise<ArtifactMeta>;
  /** Returns `undefined` when the artifact does not exist, has expired or belongs to another tenant. */
  get(artifactId: string, context: SecurityContext): Promise<Artifact | undefined>;
  /** Metadata only, with the same checks as `get`. */
  head(artifactId: string, context: SecurityContext): Promise<ArtifactMeta | undefined>;
  /**
   * Deletes an artifact the caller may read (same checks as `get`: above clearance raises `AccessDeniedError`);
   * true when it was there. A plan pointing at a deleted artifact still renders its pointer; bringing it back then
   * reports it missing. Optional for custom stores; the built-in ones have it.
   */
  delete?(artifactId: string, context: SecurityContext): Promise<boolean>;
}

/** Whether a caller with `clearance` may read content of class `sensitivity`. */
export { mayRead } from "../log/sensitivity.js";
