#!/usr/bin/env node
/**
 * The `context-ledger` command, unbundled (`npm run cli -- …` runs it under tsx). Exit codes: 0 success, 1 bad
 * input or a user error (message on stderr naming what and where), 2 an internal error. The commands live in
 * `cli.ts`, so tests can run them in-process; the installed executable is `bin.cts`.
 */
import cacheDirModule from "./cache-dir.cjs";

const { cliCacheDir } = cacheDirModule;

import { main } from "./entry.js";

const cacheDir = cliCacheDir(process.env);
// exitCode rather than exit(): stdout (a large request body in a pipe) drains before the process ends.
process.exitCode = await main(process.argv.slice(2), cacheDir === undefined ? {} : { cacheDir });
