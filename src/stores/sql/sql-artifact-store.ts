import {
  artifactAfterPut,
  artifactColumns,
  artifactFromRow,
  checkReadRequest,
  freshArtifact,
  visibleArtifact,
} from "../artifact-rules.js";
import type { Artifact, ArtifactInput, ArtifactStore, SecurityContext } from "../artifact-store.js";
import type { Clock } from "../stores.js";
import { all, column, run, type SqlDialect, type SqlStatement, storeOperations } from "./sql-dialect.js";

/** An artifact's columns as the statements bind them (see `artifactColumns`). */
export type ArtifactColumns = ReturnType<typeof artifactColumns>;

/** A dialect's statements on `artifacts`, keyed by (tenant, artifact id); rows read carry `meta` and `content`. */
export interface ArtifactSql {
  /** Inserts an artifact; an id already taken is left alone (no row changed). */
  insert(tenant: string, artifactId: string, columns: ArtifactColumns): SqlStatement;
  /** The artifact's row; `lock` (inside a write transaction) locks it for the rest of the transaction. */
  find(tenant: string, artifactId: string, lock: boolean): SqlStatement;
  update(tenant: string, artifactId: string, columns: ArtifactColumns): SqlStatement;
  /** Deletes the artifact if it expired at or before `nowMs`. */
  removeExpired(tenant: string, artifactId: string, nowMs: number): SqlStatement;
  /** Deletes the artifact. */
  remove(tenant: string, artifactId: string): SqlStatement;
}

/**
 * The `ArtifactStore` on a SQL database. Rows are keyed by (tenant, artifact id), so another tenant's artifact is
 * simply not there; a put inserts its row or, when the id is taken, reads it under the transaction's lock and
 * merges into it, in one write transaction, so two writers of the same id cannot both win.
 *
 * @example
 * const artifacts = createSqlArtifactStore(sqliteDialect(db), sqliteArtifactSql); // db already migrated
 * const meta = await artifacts.put({ content, tenant: "acme", ttlMs: 3_600_000 });
 */
export function createSqlArtifactStore(
  dialect: SqlDialect,
  sql: ArtifactSql,
  now: Clock = Date.now,
): ArtifactStore {
  const op = storeOperations(dialect);
  const fromRows = ([row]: ReadonlyArray<unknown>): Artifact | undefined =>
    row === undefined ? undefined : artifactFromRow(column(row, "meta"), column(row, "content"));

  async function put(input: ArtifactInput): Promise<Artifact> {
    const nowMs = now();
    const fresh = freshArtifact(input, nowMs);
    const { tenant, artifactId } = fresh.meta;
    return dialect.transaction(function* () {
      if ((yield* run(sql.insert(tenant, artifactId, artifactColumns(fresh)))) === 1) return fresh;
      // The id is taken (by a committed row: PostgreSQL's ON CONFLICT waited for any concurrent insert).
      const existing = fromRows(yield* all(sql.find(tenant, artifactId, true)));
      const stored = artifactAfterPut(existing, fresh, nowMs);
      if (stored !== existing) yield* run(sql.update(tenant, artifactId, artifactColumns(stored)));
      return stored;
    });
  }

  async function read(artifactId: string, context: SecurityContext): Promise<Artifact | undefined> {
    const who = checkReadRequest(artifactId, context);
    const nowMs = now();
    const found = fromRows(await dialect.all(sql.find(who.tenant, artifactId, false)));
    const artifact = visibleArtifact(found, who, nowMs);
    // An expired row is removed on sight, as the in-memory store does.
    if (artifact === undefined) await dialect.run(sql.removeExpired(who.tenant, artifactId, nowMs));
    return artifact;
  }

  async function remove(artifactId: string, context: SecurityContext): Promise<boolean> {
    const who = checkReadRequest(artifactId, context);
    const nowMs = now();
    return dialect.transaction(function* () {
      const found = fromRows(yield* all(sql.find(who.tenant, artifactId, true)));
      // Above clearance throws here, as a read would; an expired artifact was as good as gone (removed anyway).
      const visible = visibleArtifact(found, who, nowMs);
      if (found === undefined) return false;
      yield* run(sql.remove(who.tenant, artifactId));
      return visible !== undefined;
    });
  }

  return Object.freeze({
    delete: (artifactId: string, context: SecurityContext) =>
      op("artifact delete", undefined, () => remove(artifactId, context)),
    put: async (input: ArtifactInput) => (await op("artifact put", input?.threadId, () => put(input))).meta,
    get: (artifactId: string, context: SecurityContext) =>
      op("artifact get", undefined, () => read(artifactId, context)),
    head: async (artifactId: string, context: SecurityContext) =>
      (await op("artifact head", undefined, () => read(artifactId, context)))?.meta,
  });
}
