/**
 * How a command is declared: its flags and positionals, one zod schema over them, a help text built from the
 * same declaration, and a `run` that receives validated arguments. The dispatcher in `cli.ts` only sees
 * {@link Command}.
 */
import type * as z from "zod";
import {
  type FlagTable,
  GLOBAL_FLAGS,
  type PositionalSpec,
  tokenize,
  validateArgs,
  wantsHelp,
} from "./cli-args.js";
import type { CliIo } from "./cli-io.js";

/** What every command gets besides its own arguments. */
export interface CliContext {
  readonly io: CliIo;
  /** `--json`: machine output on stdout. */
  readonly json: boolean;
  /** `--db` as given (undefined: the environment or the default decides). */
  readonly db: string | undefined;
  /** `--tenant` as given (undefined: the environment or the default decides). */
  readonly tenant?: string | undefined;
  /** `--clearance` as given (undefined: the environment or the default decides). */
  readonly clearance?: string | undefined;
}

/** A command of the dispatch table. */
export interface Command {
  readonly name: string;
  /** One line for `context-ledger --help`. */
  readonly summary: string;
  /** The full `--help` text. */
  readonly help: string;
  /** Parses, validates and runs; returns the exit code. Errors propagate to the dispatcher. */
  run(argv: ReadonlyArray<string>, io: CliIo): Promise<number>;
}

/** The declaration of a command. */
export interface CommandSpec<S extends z.ZodType> {
  readonly name: string;
  readonly summary: string;
  /** The synopsis after `context-ledger`, e.g. `compact --thread ID --budget TOKENS [--model NAME]`. */
  readonly usage: string;
  /** Paragraphs printed under the synopsis. */
  readonly description: ReadonlyArray<string>;
  readonly flags: FlagTable;
  readonly positionals?: ReadonlyArray<PositionalSpec>;
  /** Validates the flags (by name) and positionals (by upper-case name). */
  readonly schema: S;
  run(args: z.output<S>, context: CliContext): Promise<number>;
}

function optionLines(rows: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, help]) => `  ${left.padEnd(width)}  ${help}`);
}

function helpText<S extends z.ZodType>(spec: CommandSpec<S>): string {
  const own = Object.entries(spec.flags).map(([name, f]): readonly [string, string] => [
    `--${name}${f.value === undefined ? "" : ` ${f.value}`}${f.repeatable === true ? " …" : ""}`,
    f.help,
  ]);
  const positional = (spec.positionals ?? []).map((p): readonly [string, string] => [p.name, p.help]);
  const global = Object.entries(GLOBAL_FLAGS).map(([name, f]): readonly [string, string] => [
    `--${name}${f.value === undefined ? "" : ` ${f.value}`}`,
    f.help,
  ]);
  const sections = [
    `usage: context-ledger ${spec.usage}`,
    "",
    ...spec.description,
    ...(positional.length > 0 ? ["", "arguments:", ...optionLines(positional)] : []),
    ...(own.length > 0 ? ["", "options:", ...optionLines(own)] : []),
    "",
    "global options:",
    ...optionLines(global),
    "",
    "exit codes: 0 success, 1 bad input or a user error, 2 an internal error",
  ];
  return sections.join("\n");
}

/** Builds a {@link Command} from its declaration. */
export function defineCommand<S extends z.ZodType>(spec: CommandSpec<S>): Command {
  const help = helpText(spec);
  return {
    name: spec.name,
    summary: spec.summary,
    help,
    run: async (argv, io) => {
      if (wantsHelp(argv)) {
        io.out(`${help}\n`);
        return 0;
      }
      const raw = tokenize(argv, { ...spec.flags, ...GLOBAL_FLAGS });
      const { db, json, tenant, clearance, help: _, ...flags } = raw.flags;
      const args = validateArgs({ flags, positionals: raw.positionals }, spec.positionals ?? [], spec.schema);
      const context: CliContext = {
        io,
        json: json === true,
        db: typeof db === "string" ? db : undefined,
        tenant: typeof tenant === "string" ? tenant : undefined,
        clearance: typeof clearance === "string" ? clearance : undefined,
      };
      return spec.run(args, context);
    },
  };
}
