/**
 * Opening the database and building the engine for one CLI invocation: `--db` (a SQLite file or a postgres://
 * URL), `--model` (tokenizer and framing profile) and `--config` (a pipeline config file). Every command runs
 * inside {@link withEngine}, which waits for background work and closes the database however the command ends.
 */
import { existsSync } from "node:fs";
import { type ContextEngine, createEngine } from "../engine/context-engine.js";
import type { EngineListener } from "../engine/engine-events.js";
import type { ContextEngineOptions } from "../engine/engine-options.js";
import type { EngineParts } from "../engine/engine-setup.js";
import { cachedLoader } from "../engine/thread-loader.js";
import { LedgerError, NotFoundError } from "../errors/ledger-error.js";
import type { JobOptions } from "../jobs/job-options.js";
import type { Sensitivity } from "../log/message.js";
import type { Stores } from "../stores/stores.js";
import { createTokenizer } from "../tokens/create-tokenizer.js";
import { lookupModel, MODEL_TABLE } from "../tokens/model-table.js";
import { createTokenBudget } from "../tokens/token-budget.js";
import { UsageError } from "./cli-args.js";
import type { CliContext } from "./cli-command.js";

/** Where the ledger lives when neither `--db` nor `CONTEXT_LEDGER_DB` says otherwise. */
export const DEFAULT_DB = "./.context-ledger/ledger.db";

/** How a command wants the engine built. */
export interface EngineChoice {
  /** `--model`: picks the tokenizer and, for Anthropic models, the Anthropic framing profile. */
  readonly model?: string;
  /** `--config`: a JSON or YAML pipeline config file. */
  readonly config?: string;
  /** Read-only commands must not create a database file that is not there. */
  readonly readOnly?: boolean;
  /** The ledger key, from `CONTEXT_LEDGER_LEDGER_KEY` (never a flag: a flag shows in the process list). */
  readonly ledgerKey?: string;
  /**
   * Background jobs (default: this command takes none from a durable queue — it only queues them, for
   * `context-ledger worker`; in process, summaries it schedules still finish before it exits).
   */
  readonly jobs?: JobOptions;
  /** A listener of the engine's events (the `worker` command prints job events). */
  readonly events?: EngineListener;
}

/** The ledger key of `CONTEXT_LEDGER_LEDGER_KEY` (docs/decisions/0018), or undefined when unset or empty. */
export function ledgerKeyOf(context: CliContext): string | undefined {
  const key = context.io.env.CONTEXT_LEDGER_LEDGER_KEY;
  return key === undefined || key === "" ? undefined : key;
}

/** The database a command uses: `--db`, else `CONTEXT_LEDGER_DB`, else {@link DEFAULT_DB}. */
export function databaseOf(context: CliContext): string {
  if (context.db === "") throw new UsageError("--db must not be empty", { field: "--db" });
  const fromEnv = context.io.env.CONTEXT_LEDGER_DB;
  return context.db ?? (fromEnv === undefined || fromEnv === "" ? DEFAULT_DB : fromEnv);
}

const CLEARANCES: ReadonlyArray<Sensitivity> = ["public", "internal", "confidential", "restricted"];

/**
 * Who the command reads and writes as: `--tenant` (else `CONTEXT_LEDGER_TENANT`, else `default`) and
 * `--clearance` (else `CONTEXT_LEDGER_CLEARANCE`, else `internal`). Threads stored before tenants are the default
 * tenant's, so a CLI that names none sees them as before.
 */
export function readerOf(context: CliContext): { readonly tenant: string; readonly clearance: Sensitivity } {
  const env = context.io.env;
  const pick = (flag: string | undefined, name: string) => {
    if (flag === "") throw new UsageError(`--${name} must not be empty`, { field: `--${name}` });
    const fromEnv = env[`CONTEXT_LEDGER_${name.toUpperCase()}`];
    return flag ?? (fromEnv === undefined || fromEnv === "" ? undefined : fromEnv);
  };
  const tenant = pick(context.tenant, "tenant") ?? "default";
  const clearance = pick(context.clearance, "clearance") ?? "internal";
  if (!(CLEARANCES as ReadonlyArray<string>).includes(clearance)) {
    throw new UsageError(
      `--clearance must be one of ${CLEARANCES.join(", ")} (or $CONTEXT_LEDGER_CLEARANCE), got ${JSON.stringify(clearance)}`,
      { field: "--clearance" },
    );
  }
  return { tenant, clearance: clearance as Sensitivity };
}

function isPostgres(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/** Opens the stores of a database; the backend's modules load only when that backend is used. */
export async function openStores(target: string, readOnly: boolean): Promise<Stores> {
  if (isPostgres(target)) {
    const { openPostgresStores } = await import("../stores/postgres/index.js");
    return openPostgresStores({ connectionString: target });
  }
  if (readOnly && target !== ":memory:" && !existsSync(target)) {
    throw new NotFoundError(`database ${target} does not exist (ingest a transcript first, or pass --db)`);
  }
  const { openSqliteStores } = await import("../stores/sqlite/index.js");
  return openSqliteStores({ path: target });
}

function tokenizerFor(model: string | undefined): Pick<ContextEngineOptions, "tokenizer" | "overhead"> {
  if (model === undefined) return {};
  try {
    const tokenizer = createTokenizer({ model });
    return { tokenizer, overhead: lookupModel(model)?.provider === "anthropic" ? "anthropic" : "openai" };
  } catch (error) {
    if (!(error instanceof LedgerError)) throw error;
    const prefixes = MODEL_TABLE.map((m) => m.prefix);
    // The shortest prefixes say it all: `gpt-4` covers `gpt-4o`, `claude-` every Claude model.
    const families = prefixes.filter((p) => !prefixes.some((q) => q !== p && p.startsWith(q)));
    const known = families.map((p) => `${p}…`).join(", ");
    throw new UsageError(`--model ${JSON.stringify(model)} is not a known model (names starting: ${known})`, {
      field: "--model",
    });
  }
}

/**
 * The engine's parts for a command: a read-only command neither writes nor restores thread checkpoints (it reads
 * whole logs), so it gets the plain loader; the others the checkpointed one, as `createContextEngine` gives. With a
 * config file the pipelines are built, and the file checked, at once; without one, when a command first runs them.
 */
async function partsFor(choice: EngineChoice): Promise<EngineParts> {
  const makeLoader =
    choice.readOnly === true
      ? cachedLoader
      : (await import("../checkpoints/checkpointed-loader.js")).checkpointedLoader;
  if (choice.config === undefined) return { makeLoader };
  const { buildEnginePipelines } = await import("../engine/engine-pipelines.js");
  return { makeLoader, buildPipelines: buildEnginePipelines };
}

/**
 * Builds an engine on the stores, loading only what the command uses; a config file is checked here so its errors
 * name the file and field.
 */
export async function engineOn(
  stores: Stores,
  choice: EngineChoice,
  reader: { readonly tenant?: string; readonly clearance?: Sensitivity } = {},
): Promise<ContextEngine> {
  const configured =
    choice.config === undefined
      ? undefined
      : (await import("../compaction/pipeline-config.js")).loadPipelineConfig(choice.config, {
          summaryCache: stores.summaries,
          artifacts: stores.artifacts,
        });
  return createEngine(
    {
      stores,
      ...reader,
      ...tokenizerFor(choice.model),
      // Every command that compacts passes its own `--budget`; this default only has to be valid.
      budget: configured?.budget ?? createTokenBudget({ contextWindow: 1_000_000 }),
      ...(configured === undefined ? {} : { pipeline: configured.config }),
      ...(choice.ledgerKey === undefined ? {} : { ledgerKey: choice.ledgerKey }),
      jobs: choice.jobs ?? { work: false },
      ...(choice.events === undefined ? {} : { events: choice.events }),
    },
    await partsFor(choice),
  );
}

/**
 * Runs `work` with the engine and stores of the command's database. Background runs started in process by the
 * command (summaries queued by `prepare` on SQLite) finish before the database closes, so nothing is lost at exit;
 * on PostgreSQL they wait in the durable queue for a worker.
 */
export async function withEngine<T>(
  context: CliContext,
  choice: EngineChoice,
  work: (engine: ContextEngine, stores: Stores, database: string) => Promise<T>,
): Promise<T> {
  const database = databaseOf(context);
  const reader = readerOf(context);
  const opened = await openStores(database, choice.readOnly === true);
  let engine: ContextEngine | undefined;
  try {
    // The command's own reads of the stores act for its tenant too, as the engine's do.
    const stores = opened.tenant === reader.tenant ? opened : (opened.forTenant?.(reader.tenant) ?? opened);
    const ledgerKey = ledgerKeyOf(context);
    engine = await engineOn(stores, ledgerKey === undefined ? choice : { ...choice, ledgerKey }, reader);
    const result = await work(engine, stores, database);
    await engine.idle();
    return result;
  } finally {
    await engine?.idle().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await opened.close();
  }
}

/** Throws `NotFoundError` unless the thread has at least one message. */
export async function requireThread(stores: Stores, threadId: string, database: string): Promise<void> {
  if ((await stores.log.length(threadId)) === 0) {
    throw new NotFoundError(`thread ${JSON.stringify(threadId)} not found in ${database} (ingest it first)`);
  }
}
