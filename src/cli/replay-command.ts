/**
 * `replay --call CALL_ID [--verify]`: re-renders a recorded model call from the stored log and plan version and
 * prints the request body as JSON on stdout (the same body `prepare` printed). The hash check goes to stderr;
 * with `--verify` a mismatch exits 1. With `--json`, stdout holds one object with the verdict:
 * `{ ok, requestHash, recordedHash, reason, callId, threadId, planVersion, logSeq, format, problems, ledger,
 * request }`. The replay always checks the ledger chains up to the call (docs/decisions/0018), with the key in
 * `CONTEXT_LEDGER_LEDGER_KEY` when the database was written with one.
 */
import * as z from "zod";
import type { ReplayResult } from "../index.js";
import { nonEmpty } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { type CliIo, printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";
import { printJson } from "./render-command.js";

/** One line saying whether a replay matched, naming the call, thread, plan version and hashes. */
export function describeReplay(r: ReplayResult): string {
  const where = `call ${r.callId} (thread ${JSON.stringify(r.threadId)}, plan v${r.planVersion}, log ${r.logSeq}, ${r.format})`;
  if (r.ok) return `verified ${where}: hash ${r.expectedHash} matches`;
  return `replay of ${where} does not match: recorded hash ${r.expectedHash}, re-rendered ${r.actualHash ?? "(none)"}: ${r.mismatch ?? r.problems[0] ?? "provider rules broken"}`;
}

/** The `--json` verdict: `reason` is null when the hashes match, `requestHash` null when nothing rendered. */
export function replayJson(r: ReplayResult) {
  return {
    ok: r.ok,
    requestHash: r.actualHash ?? null,
    recordedHash: r.expectedHash,
    reason: r.ok ? null : (r.mismatch ?? r.problems[0] ?? "provider rules broken"),
    callId: r.callId,
    threadId: r.threadId,
    planVersion: r.planVersion,
    logSeq: r.logSeq,
    format: r.format,
    problems: r.problems,
    // The chain check: heads recomputed at the call's seq and plan version, those it recorded, rows unchained.
    ledger:
      r.ledger === undefined || !r.ledger.checked
        ? null
        : {
            logHead: r.ledger.logHead ?? null,
            planHead: r.ledger.planHead ?? null,
            recordedLogHead: r.record?.logHead ?? null,
            recordedPlanHead: r.record?.planHead ?? null,
            unchained: r.ledger.unchained,
            keyed: r.ledger.keyed,
          },
    request: r.request ?? null,
  };
}

function reportMismatch(io: CliIo, r: ReplayResult, command: string): void {
  printLine(io.err, `context-ledger ${command}: ${describeReplay(r)}`);
  for (const problem of r.problems) if (problem !== r.mismatch) printLine(io.err, `  - ${problem}`);
}

/** The `replay` command. */
export const replayCommand = defineCommand({
  name: "replay",
  summary: COMMAND_SUMMARIES.replay,
  usage: "replay --call CALL_ID [--verify] [--json]",
  description: [
    "Re-renders exactly what a recorded model call sent, from the stored log and plan version, and prints the",
    "request body as JSON on stdout, after checking the thread's ledger chains (log rows and plan versions) up",
    "to the call's seq and plan version. With --verify the command exits 1 when the re-rendered request's hash",
    "differs from the recorded one or a stored row was changed, moved, deleted or inserted (both hashes and the",
    "reason, naming the thread and the row, go to stderr). With --json, stdout holds one object: {ok,",
    "requestHash, recordedHash, reason, callId, threadId, planVersion, logSeq, format, problems, ledger,",
    "request}; reason is null when everything matches. A database written with a ledger key is verified with",
    "the key in the environment variable CONTEXT_LEDGER_LEDGER_KEY.",
  ],
  flags: {
    call: { type: "string", value: "CALL_ID", help: "the callId printed by prepare" },
    verify: {
      type: "boolean",
      help: "exit 1 unless the request has the recorded hash and the ledger chains verify",
    },
  },
  schema: z.object({ call: nonEmpty, verify: z.literal(true).exactOptional() }),
  run: async (args, context) => {
    const result = await withEngine(context, { readOnly: true }, (engine) => engine.replay(args.call));
    if (context.json) {
      printLine(context.io.out, JSON.stringify(replayJson(result)));
      if (!result.ok) reportMismatch(context.io, result, "replay");
      return !result.ok && (args.verify === true || result.request === undefined) ? 1 : 0;
    }
    if (result.request === undefined) {
      // Nothing can be printed: the stored log or plan no longer renders at all.
      reportMismatch(context.io, result, "replay");
      return 1;
    }
    printJson(context.io.out, result.request);
    if (result.ok) {
      if (args.verify === true) printLine(context.io.err, describeReplay(result));
      return 0;
    }
    reportMismatch(context.io, result, "replay");
    return args.verify === true ? 1 : 0;
  },
});
