import * as z from "zod";
import { AccessDeniedError, ValidationError } from "../errors/ledger-error.js";
import { canonicalJson, sha256Hex } from "../log/canonical-json.js";
import { deepFreeze } from "../log/deep-freeze.js";
import type { Sensitivity } from "../log/message.js";
import { idSchema } from "../log/message-schema.js";
import {
  type Artifact,
  type ArtifactInput,
  type ArtifactMeta,
  mayRead,
  type SecurityContext,
} from "./artifact-store.js";
import { artifactMetaSchema, checkValue, parseRow } from "./store-row-schemas.js";

/*
 * The rules every artifact store follows, as pure functions over (existing row, new write, clock), so the
 * memory, SQLite and PostgreSQL backends differ only in how they lock and persist a row: tenants are namespaces,
 * artifacts are immutable, a rewrite never weakens sensitivity or expiry.
 */

const sensitivitySchema = z.enum(["public", "internal", "confidential", "restricted"]);

/** The longest time to live an artifact may have: 100 years (a date past that is not a useful expiry). */
export const MAX_TTL_MS = 100 * 365.25 * 24 * 3_600_000;

const inputSchema = z.strictObject({
  content: z.string(),
  tenant: idSchema,
  sensitivity: sensitivitySchema.optional(),
  threadId: idSchema.optional(),
  sourceIds: z.array(idSchema).optional(),
  ttlMs: z.number().positive().max(MAX_TTL_MS, "must be at most 100 years (in milliseconds)").optional(),
  artifactId: idSchema.optional(),
});

const contextSchema = z.object({ tenant: idSchema, clearance: sensitivitySchema.optional() });

/**
 * The id an artifact gets when the writer gives none: derived from the tenant and the content hash, so writing
 * the same content twice (a rerun, a retry) yields the same artifact, and two tenants never share one.
 */
export function defaultArtifactId(tenant: string, contentHash: string): string {
  return `art_${sha256Hex(canonicalJson([tenant, contentHash])).slice(0, 32)}`;
}

/** Validates a `put` and builds the artifact it would store if nothing is stored under its id yet. */
export function freshArtifact(raw: ArtifactInput, nowMs: number): Artifact {
  const input = checkValue(inputSchema, raw, { what: "artifact input" });
  const contentHash = sha256Hex(input.content);
  const meta: ArtifactMeta = {
    artifactId: input.artifactId ?? defaultArtifactId(input.tenant, contentHash),
    tenant: input.tenant,
    sensitivity: input.sensitivity ?? "internal",
    ...(input.threadId === undefined ? {} : { threadId: input.threadId }),
    ...(input.sourceIds === undefined ? {} : { sourceIds: [...input.sourceIds] }),
    sizeChars: input.content.length,
    contentHash,
    createdAt: new Date(nowMs).toISOString(),
    ...(input.ttlMs === undefined ? {} : { expiresAt: new Date(nowMs + input.ttlMs).toISOString() }),
  };
  return deepFreeze({ meta, content: input.content });
}

/** Whether an artifact has expired at `nowMs`. */
export function isExpired(meta: ArtifactMeta, nowMs: number): boolean {
  return meta.expiresAt !== undefined && nowMs >= Date.parse(meta.expiresAt);
}

/**
 * What a `put` leaves stored: the fresh artifact when nothing live holds the id; otherwise the existing one
 * with the stricter sensitivity and the later expiry (the same object when neither changes). Different
 * content under a live id is refused: plans point at artifacts, so an artifact never changes.
 */
export function artifactAfterPut(existing: Artifact | undefined, fresh: Artifact, nowMs: number): Artifact {
  if (existing === undefined || isExpired(existing.meta, nowMs)) return fresh;
  if (existing.meta.contentHash !== fresh.meta.contentHash) {
    throw new ValidationError(
      `artifact ${fresh.meta.artifactId} already holds different content; artifacts are immutable, store the new content under another id`,
      {
        field: "artifactId",
        ...(fresh.meta.threadId === undefined ? {} : { threadId: fresh.meta.threadId }),
      },
    );
  }
  const sensitivity = stricter(existing.meta.sensitivity, fresh.meta.sensitivity);
  const expiresAt = later(existing.meta.expiresAt, fresh.meta.expiresAt);
  if (sensitivity === existing.meta.sensitivity && expiresAt === existing.meta.expiresAt) return existing;
  const { expiresAt: _dropped, ...rest } = existing.meta;
  const meta = { ...rest, sensitivity, ...(expiresAt === undefined ? {} : { expiresAt }) };
  return deepFreeze({ meta, content: existing.content });
}

/** Validates a read's arguments and returns the caller's context. */
export function checkReadRequest(artifactId: string, context: SecurityContext): SecurityContext {
  if (typeof artifactId !== "string" || artifactId.length === 0) {
    throw new ValidationError("artifact id must be a non-empty string", { field: "artifactId" });
  }
  return checkValue(contextSchema, context, { what: "security context" }) as SecurityContext;
}

/**
 * Applies the read rules to what the caller's tenant holds under an id: expired reads as `undefined`, content
 * above the caller's clearance raises `AccessDeniedError`.
 */
export function visibleArtifact(
  artifact: Artifact | undefined,
  context: SecurityContext,
  nowMs: number,
): Artifact | undefined {
  if (artifact === undefined || isExpired(artifact.meta, nowMs)) return undefined;
  if (!mayRead(artifact.meta.sensitivity, context.clearance)) {
    const { artifactId, sensitivity, threadId } = artifact.meta;
    throw new AccessDeniedError(
      `artifact ${artifactId} is ${sensitivity}; a caller with clearance ${context.clearance ?? "internal"} may not read it`,
      threadId === undefined ? {} : { threadId },
    );
  }
  return artifact;
}

/** Validates an artifact row read back from a database (content is stored as a JSON string) and freezes it. */
export function artifactFromRow(metaJson: unknown, contentJson: unknown): Artifact {
  const meta = parseRow(artifactMetaSchema, metaJson, { what: "artifact row" }) as ArtifactMeta;
  const content = parseRow(z.string(), contentJson, { what: `content of artifact ${meta.artifactId}` });
  if (sha256Hex(content) !== meta.contentHash) {
    throw new ValidationError(`artifact ${meta.artifactId} read back does not match its content hash`, {
      field: "content",
    });
  }
  return deepFreeze({ meta, content });
}

/** The columns a database stores for an artifact. */
export function artifactColumns(artifact: Artifact): {
  meta: string;
  content: string;
  expiresAtMs: number | null;
} {
  const { expiresAt } = artifact.meta;
  return {
    meta: JSON.stringify(artifact.meta),
    // JSON keeps every string intact (NUL characters, lone surrogates) in both SQLite and PostgreSQL text.
    content: JSON.stringify(artifact.content),
    expiresAtMs: expiresAt === undefined ? null : Date.parse(expiresAt),
  };
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
