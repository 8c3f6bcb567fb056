/**
 * What the CLI touches of its process, behind one small interface: tests run commands in-process with captured
 * streams, and the real entry point wires it to `process`.
 */
import { ValidationError } from "../errors/ledger-error.js";
import { decodeUtf8 } from "../log/utf8-text.js";

/** The streams, environment and terminal facts a command may use. */
export interface CliIo {
  /** Writes to standard output (the machine channel: requests and `--json` objects). */
  out(text: string): void;
  /** Writes to standard error (messages for people: errors, progress, verification results). */
  err(text: string): void;
  /** Reads standard input to the end as UTF-8 (for `ingest -`). */
  readStdin(): Promise<string>;
  /** True when standard error is a terminal, so a progress bar may redraw a line there. */
  readonly errIsTTY: boolean;
  /** Environment variables (`CONTEXT_LEDGER_DB`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Resolves with the signal's name when the process is asked to stop (SIGINT, SIGTERM): `worker` waits for it. */
  stopRequested?(): Promise<string>;
}

/** Writes one line (adds the newline). */
export function printLine(write: (text: string) => void, line: string): void {
  write(`${line}\n`);
}

/** The CLI's view of the running Node process. */
export function processIo(): CliIo {
  // A reader that closed the pipe early (`… | head`) is not an error of ours; stop writing quietly.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
  });
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    readStdin: async () => {
      if (process.stdin.isTTY === true) {
        // Waiting for someone to type a transcript is never what `ingest -` on a terminal meant.
        throw new ValidationError("standard input is a terminal: pipe a transcript into `ingest -`", {
          field: "FILE",
        });
      }
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return decodeUtf8(Buffer.concat(chunks), "standard input");
    },
    errIsTTY: process.stderr.isTTY === true,
    stopRequested: () =>
      new Promise((resolve) => {
        process.once("SIGINT", () => resolve("SIGINT"));
        process.once("SIGTERM", () => resolve("SIGTERM"));
      }),
    env: process.env,
  };
}
