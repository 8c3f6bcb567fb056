import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe } from "vitest";

/** A throwaway PostgreSQL server on 127.0.0.1, made with `initdb` for one test run. */
export interface PostgresCluster {
  /** Connection string of a fresh database on the cluster. */
  readonly connectionString: string;
  /** Stops the server and deletes its folder. */
  stop(): Promise<void>;
}

/** Why PostgreSQL tests cannot run here, or `undefined` when they can. */
export function postgresUnavailableReason(): string | undefined {
  if (findPgBin() !== undefined) return undefined;
  return "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL (apt-get install postgresql) to run these tests";
}

/** The folder holding `initdb` and `pg_ctl`: PATH first, then Debian's versioned folders (newest first). */
export function findPgBin(): string | undefined {
  const fromPath = (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "");
  const debian = existsSync("/usr/lib/postgresql")
    ? readdirSync("/usr/lib/postgresql")
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join("/usr/lib/postgresql", v, "bin"))
    : [];
  return [...fromPath, ...debian].find(
    (dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")),
  );
}

/**
 * PostgreSQL refuses to run as root. When the tests run as root, the server runs as the `postgres` account (which
 * a PostgreSQL package creates) via `runuser`, and owns its folder; otherwise it runs as the current user.
 */
function serverAccount(): {
  wrap: (cmd: string, args: string[]) => [string, string[]];
  uid?: number;
  gid?: number;
} {
  if (process.getuid?.() !== 0) return { wrap: (cmd, args) => [cmd, args] };
  let uid: number;
  let gid: number;
  try {
    uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  } catch (cause) {
    throw new Error(
      "the tests run as root and PostgreSQL refuses root; there is no 'postgres' account to run the server as (create one, or run the tests as a normal user)",
      { cause },
    );
  }
  return { wrap: (cmd, args) => ["runuser", ["-u", "postgres", "--", cmd, ...args]], uid, gid };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(),
      );
    });
  });
}

function run(
  account: ReturnType<typeof serverAccount>,
  bin: string,
  tool: string,
  args: string[],
  dir: string,
) {
  const [cmd, full] = account.wrap(join(bin, tool), args);
  const result = spawnSync(cmd, full, { encoding: "utf8", cwd: dir, timeout: 60_000 });
  if (result.status !== 0) {
    const log = existsSync(join(dir, "server.log")) ? readFileSync(join(dir, "server.log"), "utf8") : "";
    throw new Error(
      `${tool} failed (${result.status ?? result.signal}): ${result.stderr}${result.error ?? ""}\n${log}`,
    );
  }
}

/**
 * Creates a cluster in a new temporary folder (trust auth, socket inside the folder, a free port on 127.0.0.1,
 * fsync off: the data is thrown away), starts it, creates a database and returns its connection string. Any
 * failure on the way stops the server and removes the folder before rethrowing.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = findPgBin();
  if (bin === undefined) throw new Error(postgresUnavailableReason());
  const account = serverAccount();
  const dir = mkdtempSync(join(tmpdir(), "context-ledger-pg-"));
  const data = join(dir, "data");
  if (account.uid !== undefined && account.gid !== undefined) chownSync(dir, account.uid, account.gid);
  const port = await freePort();
  let started = false;
  const stop = async () => {
    if (started) {
      started = false;
      try {
        run(account, bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"], dir);
      } catch {
        // Removing the folder below still cleans up; a server without its folder shuts itself down.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run(
      account,
      bin,
      "initdb",
      ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
      dir,
    );
    const serverOptions = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=100`;
    run(
      account,
      bin,
      "pg_ctl",
      ["-D", data, "-l", join(dir, "server.log"), "-o", serverOptions, "-w", "start"],
      dir,
    );
    started = true;
    const admin = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    try {
      await admin.query("CREATE DATABASE context_ledger_test");
    } finally {
      await admin.end();
    }
    return { connectionString: `postgresql://postgres@127.0.0.1:${port}/context_ledger_test`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * A `describe` block with a throwaway server started before its tests and stopped after them; `server()` gives it
 * to the tests. Skipped, with `what` and the reason printed, when no server binaries are found, except in CI
 * (CI=true), where the missing binaries fail the block.
 */
export function describeOnPostgres(
  title: string,
  what: string,
  body: (server: () => PostgresCluster) => void,
): void {
  const reason = postgresUnavailableReason();
  if (reason !== undefined) console.warn(`${what} skipped: ${reason}`);
  describe.skipIf(reason !== undefined && process.env.CI !== "true")(title, () => {
    let cluster: PostgresCluster | undefined;
    beforeAll(async () => {
      cluster = await startPostgresCluster();
    }, 60_000);
    afterAll(async () => {
      await cluster?.stop();
    });
    body(() => {
      if (cluster === undefined) throw new Error("the PostgreSQL server did not start");
      return cluster;
    });
  });
}
