import { StoreUnavailableError } from "../../errors/ledger-error.js";
import { immediateTransaction, intColumn, type SqliteDatabase } from "./sqlite-driver.js";

/** One numbered schema change. */
export interface SqliteMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * The schema, as numbered migrations; a released migration never changes, a new one is appended. Text that may
 * hold any string (message bodies, artifact content, checkpoint bodies) is stored as JSON, which keeps NUL
 * characters and lone surrogates intact; `threads` holds each thread's log length and plan version so both are
 * read in O(1).
 */
export const SQLITE_MIGRATIONS: ReadonlyArray<SqliteMigration> = Object.freeze([
  {
    version: 1,
    name: "initial schema",
    sql: `
      CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        log_length INTEGER NOT NULL DEFAULT 0,
        plan_version INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;
      CREATE TABLE messages (
        thread_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        body TEXT NOT NULL,
        tokens TEXT NOT NULL,
        PRIMARY KEY (thread_id, seq)
      ) WITHOUT ROWID;
      CREATE UNIQUE INDEX messages_by_id ON messages (thread_id, message_id);
      CREATE TABLE plans (
        thread_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        body TEXT NOT NULL,
        committed_at TEXT NOT NULL,
        PRIMARY KEY (thread_id, version)
      ) WITHOUT ROWID;
      CREATE TABLE artifacts (
        tenant TEXT NOT NULL,
        artifact_id TEXT NOT NULL,
        meta TEXT NOT NULL,
        content TEXT NOT NULL,
        expires_at_ms INTEGER,
        PRIMARY KEY (tenant, artifact_id)
      );
      CREATE TABLE summaries (
        key_hash TEXT PRIMARY KEY,
        summary TEXT NOT NULL,
        created_at TEXT NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE model_calls (
        ord INTEGER PRIMARY KEY AUTOINCREMENT,
        call_id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL,
        model TEXT,
        record TEXT NOT NULL,
        usage TEXT
      );
      CREATE INDEX model_calls_by_thread ON model_calls (thread_id, ord);
      CREATE INDEX model_calls_with_usage ON model_calls (model, ord) WHERE usage IS NOT NULL;
    `,
  },
  {
    // A version is stored whole or as the actions it adds to the version before it (docs/decisions/0007); rows
    // written before are whole. The partial index finds a version's snapshot without reading plan bodies.
    version: 2,
    name: "plan versions as deltas",
    sql: `
      ALTER TABLE plans ADD COLUMN kind TEXT NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'delta'));
      CREATE INDEX plans_snapshots ON plans (thread_id, version) WHERE kind = 'full';
    `,
  },
  {
    // What a worker without a cache starts from instead of the whole log (docs/decisions/0009). The key's index
    // orders a thread's checkpoints the way `latest` and retention read them; bodies (JSON strings, megabytes)
    // live in a rowid table like artifact content, since SQLite advises WITHOUT ROWID only for small rows.
    version: 3,
    name: "thread checkpoints",
    sql: `
      CREATE TABLE checkpoints (
        thread_id TEXT NOT NULL,
        plan_version INTEGER NOT NULL,
        log_length INTEGER NOT NULL,
        format TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread_id, plan_version, log_length)
      );
    `,
  },
  {
    // A checkpoint's rarely read part in its own column, the row's last: reading the body does not read it.
    version: 4,
    name: "checkpoint tails",
    sql: `ALTER TABLE checkpoints ADD COLUMN tail TEXT NOT NULL DEFAULT '""';`,
  },
  {
    // Full-text search of the log (`LogStore.search`). `messages` has no rowid, so each indexed message gets one
    // in `message_search_docs`; the FTS5 table is contentless (its words are in the index, not stored again).
    // Appends do not index: a search first indexes a thread from its mark in `search_progress` to its length
    // (words made in TypeScript, `searchTextOf`), so the messages already stored need no backfill here.
    version: 5,
    name: "message search",
    sql: `
      CREATE TABLE message_search_docs (
        doc INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        UNIQUE (thread_id, seq)
      );
      CREATE VIRTUAL TABLE message_search USING fts5(words, content = '', tokenize = 'unicode61');
      CREATE TABLE search_progress (
        thread_id TEXT PRIMARY KEY,
        indexed_upto INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;
    `,
  },
  {
    // The tamper-evident ledger (docs/decisions/0018): each message row and plan version carries its link in its
    // thread's hash chain, and a message the counts it was appended (and chained) with, apart from the counts
    // merged in later. Rows written before stay NULL here: the thread's first append (or commit) after this
    // migration chains them, in its own transaction and with its ledger key, which SQL cannot know.
    version: 6,
    name: "ledger chain",
    sql: `
      ALTER TABLE messages ADD COLUMN chain_hash TEXT;
      ALTER TABLE messages ADD COLUMN chained_tokens TEXT;
      ALTER TABLE plans ADD COLUMN chain_hash TEXT;
    `,
  },
  {
    // A thread belongs to a tenant, claimed by its first append (NULL until then); every read of its messages
    // names the reader's tenant. Threads stored before are assigned to the default tenant, which is what an
    // engine or CLI that names no tenant acts for, so a single-tenant database reads as it did.
    version: 7,
    name: "thread tenants",
    sql: `
      ALTER TABLE threads ADD COLUMN tenant TEXT;
      UPDATE threads SET tenant = 'default' WHERE log_length > 0;
      CREATE INDEX threads_by_tenant ON threads (tenant, thread_id);
    `,
  },
]);

/**
 * Brings the schema up to date: missing migrations run in order inside one `BEGIN IMMEDIATE` transaction and
 * are recorded in `schema_migrations`, so two processes opening the same file at once apply each exactly once.
 * A database newer than this library is refused rather than misread.
 */
export function migrateSqlite(
  db: SqliteDatabase,
  migrations: ReadonlyArray<SqliteMigration> = SQLITE_MIGRATIONS,
): number {
  return immediateTransaction(db, () => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL
    )`);
    const current = intColumn(
      db.prepare("SELECT coalesce(max(version), 0) AS v FROM schema_migrations").get(),
      "v",
    );
    const newest = migrations.at(-1)?.version ?? 0;
    if (current > newest) {
      throw new StoreUnavailableError(
        `the SQLite database is at schema version ${current}, newer than this library knows (${newest}); upgrade context-ledger`,
      );
    }
    const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
    return newest;
  });
}
