import { ValidationError } from "../../errors/ledger-error.js";

/**
 * The part of a PostgreSQL driver the PostgreSQL backend uses. `pg`'s `Pool` fits it; so would any pool whose
 * clients run parameterized queries and can be checked out for a transaction.
 */

/** What a query returns. */
export interface PgResult {
  readonly rows: ReadonlyArray<unknown>;
  readonly rowCount: number | null;
}

/** Anything that runs a parameterized query. */
export interface PgQueryable {
  query(text: string, values?: ReadonlyArray<unknown>): Promise<PgResult>;
}

/** A client checked out of a pool; `release(true)` discards a broken one. */
export interface PgClient extends PgQueryable {
  release(destroy?: boolean): void;
}

/** A connection pool. */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgClient>;
  end(): Promise<void>;
}

/**
 * Runs `work` in a transaction on one pooled client (READ COMMITTED, the default): any throw rolls back, and a
 * client whose rollback failed is discarded rather than returned to the pool.
 */
export async function pgTransaction<T>(pool: PgPool, work: (client: PgQueryable) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch {
      broken = true;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Checks a schema name and returns it quoted for SQL; names are restricted so quoting is trivially safe. */
export function quoteSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new ValidationError(
      `schema name ${JSON.stringify(schema)} must be lower-case letters, digits and underscores (at most 63)`,
      { field: "schema" },
    );
  }
  return `"${schema}"`;
}

/** A non-negative integer column of a row, or a thrown error naming it (rows come from outside). */
export function pgInt(row: unknown, column: string): number {
  const raw = (row as Record<string, unknown> | undefined)?.[column];
  // bigint columns arrive as strings from pg.
  const value = typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(
      `row read back from PostgreSQL holds ${String(raw)}, not a non-negative integer`,
      {
        field: column,
      },
    );
  }
  return value;
}
