#!/usr/bin/env node
/**
 * The `context-ledger` command line. Exit codes: 0 success, 1 bad input or a user error (message on stderr
 * naming what and where), 2 an internal error.
 */
import { LedgerError } from "../index.js";
import { runDemo } from "./demo-command.js";

interface Command {
  readonly summary: string;
  readonly usage: string;
  run(args: ReadonlyArray<string>): number;
}

const commands: Record<string, Command> = {
  demo: {
    summary: "generate a sample session, compact it with every action, check it against each provider",
    usage: "context-ledger demo",
    run: () => runDemo(),
  },
};

function help(): string {
  const width = Math.max(...Object.keys(commands).map((c) => c.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return [
    "usage: context-ledger <command> [options]",
    "",
    "commands:",
    ...lines,
    "",
    "Each command takes --help.",
  ].join("\n");
}

/** Runs the CLI with the given arguments and returns the exit code. */
export function main(argv: ReadonlyArray<string>): number {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(help());
    return name === undefined ? 1 : 0;
  }
  const command = commands[name];
  if (command === undefined) {
    console.error(`context-ledger: unknown command ${JSON.stringify(name)}\n\n${help()}`);
    return 1;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(`usage: ${command.usage}\n\n${command.summary}`);
    return 0;
  }
  try {
    return command.run(rest);
  } catch (error) {
    if (error instanceof LedgerError) {
      console.error(`context-ledger ${name}: ${error.message}`);
      return 1;
    }
    console.error(`context-ledger ${name}: internal error: ${(error as Error).stack ?? String(error)}`);
    return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
