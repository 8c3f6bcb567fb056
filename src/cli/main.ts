#!/usr/bin/env node
/**
 * The `context-ledger` executable (`npm run cli -- …`). Exit codes: 0 success, 1 bad input or a user error
 * (message on stderr naming what and where), 2 an internal error. The commands live in `cli.ts`, so tests can
 * run them in-process.
 */
import { runCli } from "./cli.js";
import { processIo } from "./cli-io.js";

// exitCode rather than exit(): stdout (a large request body in a pipe) drains before the process ends.
process.exitCode = await runCli(process.argv.slice(2), processIo());
