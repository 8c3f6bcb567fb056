import { StoreUnavailableError } from "../../errors/ledger-error.js";
import { type PgPool, pgInt, pgTransaction, quoteSchema } from "./postgres-driver.js";

/** One numbered schema change; `sql` receives the quoted schema name. */
export interface PostgresMigration {
  readonly version: number;
  readonly name: string;
  sql(schema: string): string;
}

/**
 * The schema, as numbered migrations; a released migration never changes, a new one is appended. Message
 * bodies, artifact content and checkpoint bodies are JSON text (PostgreSQL text cannot hold NUL characters,
 * JSON escapes them); `threads` holds each thread's log length and plan version, and its row is what writers
 * lock.
 */
export const POSTGRES_MIGRATIONS: ReadonlyArray<PostgresMigration> = Object.freeze([
  {
    version: 1,
    name: "initial schema",
    sql: (s: string) => `
      CREATE TABLE ${s}.threads (
        thread_id text PRIMARY KEY,
        log_length integer NOT NULL DEFAULT 0,
        plan_version integer NOT NULL DEFAULT 0
      );
      CREATE TABLE ${s}.messages (
        thread_id text NOT NULL,
        seq integer NOT NULL,
        message_id text NOT NULL,
        body text NOT NULL,
        tokens jsonb NOT NULL,
        PRIMARY KEY (thread_id, seq)
      );
      CREATE UNIQUE INDEX messages_by_id ON ${s}.messages (thread_id, message_id);
      CREATE TABLE ${s}.plans (
        thread_id text NOT NULL,
        version integer NOT NULL,
        body text NOT NULL,
        committed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (thread_id, version)
      );
      CREATE TABLE ${s}.artifacts (
        tenant text NOT NULL,
        artifact_id text NOT NULL,
        meta text NOT NULL,
        content text NOT NULL,
        expires_at_ms bigint,
        PRIMARY KEY (tenant, artifact_id)
      );
      CREATE TABLE ${s}.summaries (
        key_hash text PRIMARY KEY,
        summary text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE ${s}.model_calls (
        ord bigserial PRIMARY KEY,
        call_id text NOT NULL UNIQUE,
        thread_id text NOT NULL,
        model text,
        record text NOT NULL,
        usage text
      );
      CREATE INDEX model_calls_by_thread ON ${s}.model_calls (thread_id, ord);
      CREATE INDEX model_calls_with_usage ON ${s}.model_calls (model, ord) WHERE usage IS NOT NULL;
    `,
  },
  {
    // A version is stored whole or as the actions it adds to the version before it (docs/decisions/0007); rows
    // written before are whole. The partial index finds a version's snapshot without reading plan bodies.
    version: 2,
    name: "plan versions as deltas",
    sql: (s: string) => `
      ALTER TABLE ${s}.plans ADD COLUMN kind text NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'delta'));
      CREATE INDEX plans_snapshots ON ${s}.plans (thread_id, version) WHERE kind = 'full';
    `,
  },
  {
    // What a worker without a cache starts from instead of the whole log (docs/decisions/0009); the key's index
    // orders a thread's checkpoints the way `latest` and retention read them. The version and length are bigint
    // so every safe integer the other backends accept fits; the body is a JSON string (TOAST keeps it aside).
    version: 3,
    name: "thread checkpoints",
    sql: (s: string) => `
      CREATE TABLE ${s}.checkpoints (
        thread_id text NOT NULL,
        plan_version bigint NOT NULL,
        log_length bigint NOT NULL,
        format text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (thread_id, plan_version, log_length)
      );
    `,
  },
  {
    // A checkpoint's rarely read part in its own column (TOAST keeps it aside): reading the body does not read it.
    version: 4,
    name: "checkpoint tails",
    sql: (s: string) => `ALTER TABLE ${s}.checkpoints ADD COLUMN tail text NOT NULL DEFAULT '""';`,
  },
  {
    // Full-text search of the log (`LogStore.search`): each message's words as a `tsvector` (NULL without any),
    // with a GIN index. Appends do not index: a search first indexes a thread from its mark in `search_progress`
    // to its length (words made in TypeScript, `searchTextOf`), so the messages already stored need no backfill.
    version: 5,
    name: "message search",
    sql: (s: string) => `
      ALTER TABLE ${s}.messages ADD COLUMN search tsvector;
      CREATE INDEX messages_search ON ${s}.messages USING gin (search);
      CREATE TABLE ${s}.search_progress (
        thread_id text PRIMARY KEY,
        indexed_upto integer NOT NULL DEFAULT 0
      );
    `,
  },
  {
    // The tamper-evident ledger (docs/decisions/0018): each message row and plan version carries its link in its
    // thread's hash chain, and a message the counts it was appended (and chained) with, apart from the counts
    // merged in later. Rows written before stay NULL here: the thread's first append (or commit) after this
    // migration chains them, in its own transaction and with its ledger key, which SQL cannot know.
    version: 6,
    name: "ledger chain",
    sql: (s: string) => `
      ALTER TABLE ${s}.messages ADD COLUMN chain_hash text;
      ALTER TABLE ${s}.messages ADD COLUMN chained_tokens text;
      ALTER TABLE ${s}.plans ADD COLUMN chain_hash text;
    `,
  },
  {
    // A thread belongs to a tenant, claimed by its first append (NULL until then); every read of its messages
    // names the reader's tenant. Threads stored before are assigned to the default tenant, which is what an
    // engine or CLI that names no tenant acts for, so a single-tenant database reads as it did.
    version: 7,
    name: "thread tenants",
    sql: (s: string) => `
      ALTER TABLE ${s}.threads ADD COLUMN tenant text;
      UPDATE ${s}.threads SET tenant = 'default' WHERE log_length > 0;
      CREATE INDEX threads_by_tenant ON ${s}.threads (tenant, thread_id);
    `,
  },
]);

/**
 * Brings the schema up to date in one transaction under an advisory lock keyed by the schema name, so several
 * workers starting at once apply each migration exactly once (DDL is transactional in PostgreSQL: a failed
 * migration leaves nothing behind). A database newer than this library is refused rather than misread.
 */
export async function migratePostgres(
  pool: PgPool,
  schema: string,
  migrations: ReadonlyArray<PostgresMigration> = POSTGRES_MIGRATIONS,
): Promise<number> {
  const s = quoteSchema(schema);
  return pgTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`context-ledger:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query(`SELECT coalesce(max(version), 0) AS v FROM ${s}.schema_migrations`);
    const current = pgInt(rows[0], "v");
    const newest = migrations.at(-1)?.version ?? 0;
    if (current > newest) {
      throw new StoreUnavailableError(
        `PostgreSQL schema ${schema} is at version ${current}, newer than this library knows (${newest}); upgrade context-ledger`,
      );
    }
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      await client.query(migration.sql(s));
      await client.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    return newest;
  });
}
