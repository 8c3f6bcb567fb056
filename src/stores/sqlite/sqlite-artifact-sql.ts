import type { ArtifactColumns, ArtifactSql } from "../sql/sql-artifact-store.js";
import { statement } from "../sql/sql-dialect.js";

/** SQLite's statements on `artifacts`; `BEGIN IMMEDIATE` already locks what a put reads, so `find` never locks. */
export const sqliteArtifactSql: ArtifactSql = Object.freeze({
  insert: (tenant: string, artifactId: string, c: ArtifactColumns) =>
    statement(
      `INSERT INTO artifacts (tenant, artifact_id, meta, content, expires_at_ms) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (tenant, artifact_id) DO NOTHING`,
      [tenant, artifactId, c.meta, c.content, c.expiresAtMs],
    ),
  find: (tenant: string, artifactId: string) =>
    statement("SELECT meta, content FROM artifacts WHERE tenant = ? AND artifact_id = ?", [
      tenant,
      artifactId,
    ]),
  update: (tenant: string, artifactId: string, c: ArtifactColumns) =>
    statement(
      "UPDATE artifacts SET meta = ?, content = ?, expires_at_ms = ? WHERE tenant = ? AND artifact_id = ?",
      [c.meta, c.content, c.expiresAtMs, tenant, artifactId],
    ),
  remove: (tenant: string, artifactId: string) =>
    statement("DELETE FROM artifacts WHERE tenant = ? AND artifact_id = ?", [tenant, artifactId]),
  removeExpired: (tenant: string, artifactId: string, nowMs: number) =>
    statement("DELETE FROM artifacts WHERE tenant = ? AND artifact_id = ? AND expires_at_ms <= ?", [
      tenant,
      artifactId,
      nowMs,
    ]),
});
