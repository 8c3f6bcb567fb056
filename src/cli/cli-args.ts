/**
 * The CLI's argument parser: a small tokenizer (`--flag value`, `--flag=value`, boolean flags, positionals, `--`)
 * followed by one zod schema per command, so every rule about a flag's value lives in a schema and every error
 * names the flag.
 */
import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";

/** A flag a command accepts. */
export interface FlagSpec {
  readonly type: "string" | "boolean";
  /** Placeholder of the value in the help text, e.g. `TOKENS`. */
  readonly value?: string;
  readonly help: string;
  /** The flag may be given several times; its values are collected in order. */
  readonly repeatable?: boolean;
}

/** Flags by name (without the leading dashes). */
export type FlagTable = Readonly<Record<string, FlagSpec>>;

/** A positional argument a command accepts. */
export interface PositionalSpec {
  /** Upper-case name used in the usage line and in errors, e.g. `FILE`. */
  readonly name: string;
  readonly help: string;
}

/** The flags every command takes. */
export const GLOBAL_FLAGS: FlagTable = {
  db: {
    type: "string",
    value: "PATH",
    help: "SQLite file (default $CONTEXT_LEDGER_DB, else ./.context-ledger/ledger.db) or a postgres:// URL",
  },
  tenant: {
    type: "string",
    value: "ID",
    help: "tenant to act for (default $CONTEXT_LEDGER_TENANT, else default); another tenant's thread is refused",
  },
  clearance: {
    type: "string",
    value: "CLASS",
    help: "public | internal | confidential | restricted (default $CONTEXT_LEDGER_CLEARANCE, else internal): content above it shows as a withheld stub",
  },
  json: { type: "boolean", help: "machine output: one JSON value on stdout (errors as JSON on stderr)" },
  help: { type: "boolean", help: "print this help and exit" },
};

/** A command line the user got wrong (an unknown flag, a missing or malformed value): exit code 1. */
export class UsageError extends ValidationError {
  constructor(problem: string, where: { readonly field: string }) {
    super(problem, where);
    // The problem already names the flag; the base class's "(at field …)" suffix would only repeat it.
    this.message = problem;
  }
}

/** Flags and positionals as typed, before validation. */
export interface RawArgs {
  readonly flags: Readonly<Record<string, string | true | ReadonlyArray<string>>>;
  readonly positionals: ReadonlyArray<string>;
}

/** True when the arguments ask for help (before `--`), whatever else is wrong with them. */
export function wantsHelp(argv: ReadonlyArray<string>): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

function takeValue(argv: ReadonlyArray<string>, i: number, name: string, spec: FlagSpec): string {
  const value = argv[i];
  // `--budget --json` is a forgotten value, not a budget named "--json"; `--budget -5` is a (bad) value.
  if (value === undefined || /^--[a-z]/.test(value)) {
    throw new UsageError(`--${name} needs a value (${spec.value ?? "VALUE"})`, { field: `--${name}` });
  }
  return value;
}

/** Splits arguments into flags and positionals; unknown, repeated or value-less flags throw `UsageError`. */
export function tokenize(argv: ReadonlyArray<string>, table: FlagTable): RawArgs {
  const flags: Record<string, string | true | string[]> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === "-h") {
      flags.help = true;
      continue;
    }
    if (!arg.startsWith("-") || arg === "-" || /^-\d/.test(arg)) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = arg.startsWith("--") ? table[name] : undefined;
    if (spec === undefined) {
      const known = Object.keys(table).map((k) => `--${k}`);
      const flag = eq < 0 ? arg : arg.slice(0, eq);
      const guess = closest(flag.replace(/^-+/, "--"), known);
      const hint = guess === undefined ? "" : `; did you mean ${guess}?`;
      throw new UsageError(`unknown flag ${flag}${hint} (known: ${known.join(", ")})`, { field: flag });
    }
    if (spec.type === "boolean") {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`, { field: `--${name}` });
      flags[name] = true;
      continue;
    }
    const value = eq >= 0 ? arg.slice(eq + 1) : takeValue(argv, ++i, name, spec);
    const before = flags[name];
    if (spec.repeatable === true) flags[name] = [...(Array.isArray(before) ? before : []), value];
    else if (before !== undefined) throw new UsageError(`--${name} is given twice`, { field: `--${name}` });
    else flags[name] = value;
  }
  return { flags, positionals };
}

/** The label of an input key in messages: `--budget` for a flag, `FROM` for a positional. */
function labelOf(key: string): string {
  return /^[A-Z]/.test(key) ? key : `--${key}`;
}

/**
 * Validates tokenized arguments with a command's schema. Flags keep their names; positionals are keyed by their
 * upper-case names. The first problem throws `UsageError` naming the flag or positional and the value given.
 */
export function validateArgs<S extends z.ZodType>(
  raw: RawArgs,
  positionals: ReadonlyArray<PositionalSpec>,
  schema: S,
): z.output<S> {
  if (raw.positionals.length > positionals.length) {
    const extra = raw.positionals[positionals.length]!;
    throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, { field: extra });
  }
  const input: Record<string, unknown> = { ...raw.flags };
  positionals.forEach((p, i) => {
    if (raw.positionals[i] !== undefined) input[p.name] = raw.positionals[i];
  });
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const key = String(issue.path[0] ?? "");
  const label = labelOf(key);
  const given = input[key];
  const problem =
    given === undefined
      ? `${label} is required`
      : `${label} ${issue.message}${typeof given === "string" ? `, got ${JSON.stringify(given)}` : ""}`;
  throw new UsageError(problem, { field: label });
}

/** A non-empty string (thread ids, call ids, paths, model names). */
export const nonEmpty = z.string().min(1, "must not be empty");

/** A whole number of tokens above zero, written in digits. */
export const positiveInteger = z
  .string()
  .regex(/^\+?\d+$/, "must be a positive integer")
  .transform(Number)
  .refine((n) => Number.isSafeInteger(n) && n > 0, "must be a positive integer");

/** A plan version: a whole number ≥ 0 (0 is the empty plan). */
export const planVersion = z
  .string()
  .regex(/^\d+$/, "must be a plan version (an integer ≥ 0)")
  .transform(Number)
  .refine(Number.isSafeInteger, "must be a plan version (an integer ≥ 0)");

/** The provider request formats, as the CLI spells them. */
export const FORMAT_NAMES = ["openai", "anthropic", "responses"] as const;

/** A provider request format. */
export const formatName = z.enum(FORMAT_NAMES, { error: `must be one of ${FORMAT_NAMES.join(", ")}` });

/** Edit distance between two short strings (insertions, deletions, substitutions, adjacent swaps). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate nearest to `word` when it is a plausible typo of it (at most a third of it wrong), else undefined. */
export function closest(word: string, candidates: ReadonlyArray<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const distance = editDistance(word, c);
    if (distance < bestDistance) {
      best = c;
      bestDistance = distance;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(word.length / 3)) ? best : undefined;
}
