import {
  artifactAfterPut,
  artifactColumns,
  artifactFromRow,
  checkReadRequest,
  freshArtifact,
  visibleArtifact,
} from "../artifact-rules.js";
import type { Artifact, ArtifactInput, ArtifactStore, SecurityContext } from "../artifact-store.js";
import { guarded } from "../store-errors.js";
import type { Clock } from "../stores.js";
import { type PgPool, type PgQueryable, pgColumn, pgTransaction } from "./postgres-driver.js";

/**
 * An `ArtifactStore` on PostgreSQL. Rows are keyed by (tenant, artifact id), so another tenant's artifact is
 * simply not there; a put inserts its row or, when the id is taken, locks and merges it in one transaction, so
 * two workers writing the same id cannot both win.
 *
 * @example
 * const artifacts = createPostgresArtifactStore(pool, '"context_ledger"'); // schema already migrated
 * const meta = await artifacts.put({ content, tenant: "acme", ttlMs: 3_600_000 });
 */
export function createPostgresArtifactStore(pool: PgPool, s: string, now: Clock = Date.now): ArtifactStore {
  async function find(db: PgQueryable, tenant: string, artifactId: string, lock: boolean) {
    const { rows } = await db.query(
      `SELECT meta, content FROM ${s}.artifacts WHERE tenant = $1 AND artifact_id = $2${lock ? " FOR UPDATE" : ""}`,
      [tenant, artifactId],
    );
    return rows.length === 0
      ? undefined
      : artifactFromRow(pgColumn(rows[0], "meta"), pgColumn(rows[0], "content"));
  }

  async function put(input: ArtifactInput): Promise<Artifact> {
    const nowMs = now();
    const fresh = freshArtifact(input, nowMs);
    const { tenant, artifactId } = fresh.meta;
    const c = artifactColumns(fresh);
    return pgTransaction(pool, async (client) => {
      const inserted = await client.query(
        `INSERT INTO ${s}.artifacts (tenant, artifact_id, meta, content, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING`,
        [tenant, artifactId, c.meta, c.content, c.expiresAtMs],
      );
      if (inserted.rowCount === 1) return fresh;
      // The id is taken (by a committed row: ON CONFLICT waited for any concurrent insert); merge under a lock.
      const existing = await find(client, tenant, artifactId, true);
      const stored = artifactAfterPut(existing, fresh, nowMs);
      if (stored !== existing) {
        const u = artifactColumns(stored);
        await client.query(
          `UPDATE ${s}.artifacts SET meta = $3, content = $4, expires_at_ms = $5 WHERE tenant = $1 AND artifact_id = $2`,
          [tenant, artifactId, u.meta, u.content, u.expiresAtMs],
        );
      }
      return stored;
    });
  }

  async function read(artifactId: string, context: SecurityContext): Promise<Artifact | undefined> {
    const who = checkReadRequest(artifactId, context);
    const nowMs = now();
    const artifact = visibleArtifact(await find(pool, who.tenant, artifactId, false), who, nowMs);
    if (artifact === undefined) {
      // An expired row is removed on sight, as the in-memory store does.
      await pool.query(
        `DELETE FROM ${s}.artifacts WHERE tenant = $1 AND artifact_id = $2 AND expires_at_ms <= $3`,
        [who.tenant, artifactId, nowMs],
      );
    }
    return artifact;
  }

  return Object.freeze({
    put: async (input: ArtifactInput) =>
      (await guarded("PostgreSQL", "artifact put", input?.threadId, () => put(input))).meta,
    get: (artifactId: string, context: SecurityContext) =>
      guarded("PostgreSQL", "artifact get", undefined, () => read(artifactId, context)),
    head: async (artifactId: string, context: SecurityContext) =>
      (await guarded("PostgreSQL", "artifact head", undefined, () => read(artifactId, context)))?.meta,
  });
}
