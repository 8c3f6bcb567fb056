/**
 * The CLI's per-user cache directory: where a command keeps what the next one can reuse (the parsed tokenizer
 * vocabulary, the compiled code of the bundled executable). Both only make a later command faster; nothing in
 * them is ever needed. The directory must belong to the user and be closed to others, since compiled code read
 * from it runs: anything else (a symlink, another owner, group- or world-writable) turns the cache off.
 */
import fs = require("node:fs");
import os = require("node:os");
import path = require("node:path");

/**
 * The cache directory, made if missing, or `undefined` when caching is off or the place is unsafe.
 * `CONTEXT_LEDGER_CACHE=off` turns it off; `CONTEXT_LEDGER_CACHE_DIR` chooses it (default: a
 * `context-ledger-<uid>` folder in the system temporary directory).
 */
function cliCacheDir(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (env.CONTEXT_LEDGER_CACHE === "off" || env.CONTEXT_LEDGER_CACHE === "0") return undefined;
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  const dir = env.CONTEXT_LEDGER_CACHE_DIR || path.join(os.tmpdir(), `context-ledger-${uid ?? "user"}`);
  try {
    fs.mkdirSync(dir, { mode: 0o700 }); // one level only: the parent must already exist
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  try {
    const stat = fs.lstatSync(dir);
    if (!stat.isDirectory() || stat.isSymbolicLink()) return undefined;
    if (uid !== undefined && stat.uid !== uid) return undefined;
    if (process.platform !== "win32" && (stat.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * Deletes all but the `keep` most recently written files of `dir` whose names start with `prefix`: each new build
 * or install writes its own compiled-code file, and the old ones would otherwise pile up.
 */
function pruneCacheFiles(dir: string, prefix: string, keep: number): void {
  try {
    const files = fs
      .readdirSync(dir)
      .filter((name) => name.startsWith(prefix))
      .map((name) => ({ name, at: fs.statSync(path.join(dir, name)).mtimeMs }))
      .sort((a, b) => b.at - a.at);
    for (const { name } of files.slice(keep)) fs.unlinkSync(path.join(dir, name));
  } catch {
    // Another process pruning at the same time, or a file already gone: nothing to do.
  }
}

/** Which compiled-code file a run uses: its command word, or "-" for options and oddities. */
function commandOf(argv: ReadonlyArray<string>): string {
  const word = argv[0];
  return word !== undefined && /^[a-z][a-z-]{0,31}$/.test(word) ? word : "-";
}

export = { cliCacheDir, pruneCacheFiles, commandOf };
