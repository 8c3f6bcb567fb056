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
import { column, immediateTransaction, type SqliteDatabase } from "./sqlite-driver.js";

/**
 * An `ArtifactStore` on SQLite. Rows are keyed by (tenant, artifact id), so another tenant's artifact is simply
 * not there; a put reads and writes its row inside one `BEGIN IMMEDIATE` transaction, so two processes writing
 * the same id cannot both win.
 *
 * @example
 * const artifacts = createSqliteArtifactStore(db); // db already migrated
 * const meta = await artifacts.put({ content, tenant: "acme", ttlMs: 3_600_000 });
 */
export function createSqliteArtifactStore(db: SqliteDatabase, now: Clock = Date.now): ArtifactStore {
  const sql = {
    find: db.prepare("SELECT meta, content FROM artifacts WHERE tenant = ? AND artifact_id = ?"),
    save: db.prepare(
      `INSERT INTO artifacts (tenant, artifact_id, meta, content, expires_at_ms) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (tenant, artifact_id) DO UPDATE
       SET meta = excluded.meta, content = excluded.content, expires_at_ms = excluded.expires_at_ms`,
    ),
    remove: db.prepare("DELETE FROM artifacts WHERE tenant = ? AND artifact_id = ? AND expires_at_ms <= ?"),
  };
  const find = (tenant: string, artifactId: string): Artifact | undefined => {
    const row = sql.find.get(tenant, artifactId);
    return row === undefined ? undefined : artifactFromRow(column(row, "meta"), column(row, "content"));
  };

  function put(input: ArtifactInput): Artifact {
    const nowMs = now();
    const fresh = freshArtifact(input, nowMs);
    const { tenant, artifactId } = fresh.meta;
    return immediateTransaction(db, () => {
      const existing = find(tenant, artifactId);
      const stored = artifactAfterPut(existing, fresh, nowMs);
      if (stored !== existing) {
        const c = artifactColumns(stored);
        sql.save.run(tenant, artifactId, c.meta, c.content, c.expiresAtMs);
      }
      return stored;
    });
  }

  function read(artifactId: string, context: SecurityContext): Artifact | undefined {
    const who = checkReadRequest(artifactId, context);
    const nowMs = now();
    const artifact = visibleArtifact(find(who.tenant, artifactId), who, nowMs);
    // An expired row is removed on sight, as the in-memory store does.
    if (artifact === undefined) sql.remove.run(who.tenant, artifactId, nowMs);
    return artifact;
  }

  return Object.freeze({
    put: (input: ArtifactInput) => guarded("SQLite", "artifact put", input?.threadId, () => put(input).meta),
    get: (artifactId: string, context: SecurityContext) =>
      guarded("SQLite", "artifact get", undefined, () => read(artifactId, context)),
    head: (artifactId: string, context: SecurityContext) =>
      guarded("SQLite", "artifact head", undefined, () => read(artifactId, context)?.meta),
  });
}
