/**
 * The one line each command shows in `context-ledger --help`, apart from the commands themselves so the main help
 * (and an unknown command's hint) loads none of them.
 */
export const COMMAND_SUMMARIES = {
  ingest: "append a JSONL transcript to a thread (all lines or none)",
  compact: "compact a thread to a token budget and commit a plan version",
  render: "print the request body of a plan version as JSON",
  prepare: "prepare the next model call: compact, render, record; print callId, request and stats",
  replay: "re-render a recorded call; --verify fails when its hash differs",
  explain: "table of each message under a plan: kept/cleared/summarized/externalized/dropped, tokens, why",
  diff: "readable diff of two plan versions of a thread",
  worker: "run background jobs (summaries) from a PostgreSQL database's queue until SIGINT/SIGTERM",
  jobs: "count background jobs queued, running and failed (of a thread, or of all)",
  report: "write a self-contained HTML audit report of a thread (calls, requests, fates, search)",
  demo: "end to end on a generated session in a temporary SQLite file, with a short report",
} as const;

/** A command's name. */
export type CommandName = keyof typeof COMMAND_SUMMARIES;
