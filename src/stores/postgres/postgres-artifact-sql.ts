import type { ArtifactColumns, ArtifactSql } from "../sql/sql-artifact-store.js";
import { statement } from "../sql/sql-dialect.js";

/** PostgreSQL's statements on `artifacts` in schema `s` (quoted); a put's `find` locks the row `FOR UPDATE`. */
export function postgresArtifactSql(s: string): ArtifactSql {
  return Object.freeze({
    insert: (tenant: string, artifactId: string, c: ArtifactColumns) =>
      statement(
        `INSERT INTO ${s}.artifacts (tenant, artifact_id, meta, content, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING`,
        [tenant, artifactId, c.meta, c.content, c.expiresAtMs],
      ),
    find: (tenant: string, artifactId: string, lock: boolean) =>
      statement(
        `SELECT meta, content FROM ${s}.artifacts WHERE tenant = $1 AND artifact_id = $2${lock ? " FOR UPDATE" : ""}`,
        [tenant, artifactId],
      ),
    update: (tenant: string, artifactId: string, c: ArtifactColumns) =>
      statement(
        `UPDATE ${s}.artifacts SET meta = $3, content = $4, expires_at_ms = $5 WHERE tenant = $1 AND artifact_id = $2`,
        [tenant, artifactId, c.meta, c.content, c.expiresAtMs],
      ),
    remove: (tenant: string, artifactId: string) =>
      statement(`DELETE FROM ${s}.artifacts WHERE tenant = $1 AND artifact_id = $2`, [tenant, artifactId]),
    removeExpired: (tenant: string, artifactId: string, nowMs: number) =>
      statement(`DELETE FROM ${s}.artifacts WHERE tenant = $1 AND artifact_id = $2 AND expires_at_ms <= $3`, [
        tenant,
        artifactId,
        nowMs,
      ]),
  });
}
