/**
 * The `context-ledger` dispatcher: a table of commands, global flags, and one place that turns errors into
 * messages and exit codes.
 *
 * Exit codes: 0 success; 1 bad input or a user error (a malformed flag or transcript line, an unknown thread,
 * plan version or call, a budget nothing can meet, a write lost to another writer, an artifact the caller may
 * not read); 2 anything else. A database that cannot be opened or read (a corrupt file, an unreachable server)
 * is 2: the request may be fine and the same command can succeed once the store is repaired, so scripts should
 * not treat it as a mistake in their input.
 */
import { LedgerError, type LedgerErrorCode } from "../errors/ledger-error.js";
import { closest, GLOBAL_FLAGS, UsageError } from "./cli-args.js";
import type { Command } from "./cli-command.js";
import { type CliIo, printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES, type CommandName } from "./command-summaries.js";

/**
 * The commands, in the order the main help lists them. Each is loaded when it runs: `--help` and a mistyped
 * name start without the library.
 */
const COMMANDS: Readonly<Record<CommandName, () => Promise<Command>>> = {
  ingest: async () => (await import("./ingest-command.js")).ingestCommand,
  compact: async () => (await import("./compact-command.js")).compactCommand,
  render: async () => (await import("./render-command.js")).renderCommand,
  prepare: async () => (await import("./prepare-command.js")).prepareCommand,
  replay: async () => (await import("./replay-command.js")).replayCommand,
  explain: async () => (await import("./explain-command.js")).explainCommand,
  diff: async () => (await import("./diff-command.js")).diffCommand,
  worker: async () => (await import("./worker-command.js")).workerCommand,
  jobs: async () => (await import("./jobs-command.js")).jobsCommand,
  report: async () => (await import("./report-command.js")).reportCommand,
  demo: async () => (await import("./demo-command.js")).demoCommand,
};
const NAMES = Object.keys(COMMANDS) as CommandName[];

/** Error families that mean "your input or request was wrong" (exit 1); every other failure exits 2. */
const USER_ERRORS: ReadonlySet<LedgerErrorCode> = new Set<LedgerErrorCode>([
  "VALIDATION",
  "NOT_FOUND",
  "BUDGET_INFEASIBLE",
  "VERSION_CONFLICT",
  "ACCESS_DENIED",
]);

/** The exit code for an error a command threw. */
export function exitCodeOf(error: unknown): 1 | 2 {
  return error instanceof LedgerError && USER_ERRORS.has(error.code) ? 1 : 2;
}

/** The text of `context-ledger --help`. */
export function mainHelp(): string {
  const width = Math.max(...NAMES.map((name) => name.length));
  const flags = Object.entries(GLOBAL_FLAGS).map(
    ([name, f]) => `  --${`${name}${f.value === undefined ? "" : ` ${f.value}`}`.padEnd(width + 3)}${f.help}`,
  );
  return [
    "usage: context-ledger <command> [options]",
    "",
    "Context compaction for long-running LLM agents: an append-only thread log, versioned compaction plans",
    "and a deterministic renderer, kept in a database.",
    "",
    "commands:",
    ...NAMES.map((name) => `  ${name.padEnd(width)}  ${COMMAND_SUMMARIES[name]}`),
    "",
    "global options (every command):",
    ...flags,
    "",
    "Each command takes --help. Exit codes: 0 success, 1 bad input or a user error, 2 an internal error.",
  ].join("\n");
}

function reportError(io: CliIo, command: string, error: unknown, json: boolean): number {
  const code = exitCodeOf(error);
  const ledger = error instanceof LedgerError ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  if (json) {
    const body = { code: ledger?.code ?? "INTERNAL", message, where: ledger?.where ?? {}, exitCode: code };
    printLine(io.err, JSON.stringify({ error: body }));
    return code;
  }
  if (ledger === undefined) {
    const detail = error instanceof Error ? (error.stack ?? message) : message;
    printLine(io.err, `context-ledger ${command}: internal error: ${detail}`);
  } else printLine(io.err, `context-ledger ${command}: ${message}`);
  if (error instanceof UsageError) printLine(io.err, `run "context-ledger ${command} --help" for usage`);
  return code;
}

/** Moves global flags written before the command name (`context-ledger --db x render …`) after it. */
function splitCommand(argv: ReadonlyArray<string>): { name: string | undefined; rest: string[] } {
  const leading: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--json" || arg.startsWith("--db=")) leading.push(arg);
    else if (arg === "--db" && i + 1 < argv.length) leading.push(arg, argv[++i]!);
    else break;
  }
  return { name: argv[i], rest: [...argv.slice(i + 1), ...leading] };
}

/** Runs the CLI with the given arguments and returns the exit code. */
export async function runCli(argv: ReadonlyArray<string>, io: CliIo): Promise<number> {
  const { name, rest } = splitCommand(argv);
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const write = name === undefined ? io.err : io.out;
    printLine(write, mainHelp());
    return name === undefined ? 1 : 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name as CommandName] : undefined;
  if (load === undefined) {
    const guess = closest(name, NAMES);
    const hint = guess === undefined ? "" : `; did you mean ${guess}?`;
    printLine(io.err, `context-ledger: unknown command ${JSON.stringify(name)}${hint}\n\n${mainHelp()}`);
    return 1;
  }
  try {
    return await (await load()).run(rest, io);
  } catch (error) {
    return reportError(io, name, error, rest.includes("--json"));
  }
}
