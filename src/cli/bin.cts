#!/usr/bin/env node
/**
 * The installed `context-ledger` executable. It runs the CLI from one bundled file (`context-ledger.cjs`, made
 * by `npm run build`) and keeps V8's compiled code of that file in the per-user cache, so a command does not
 * parse and compile the library on every start: Node 22+ through `module.enableCompileCache`, Node 20 through
 * `vm.Script` cached data. Without the bundle (a plain `tsc` build) it runs the unbundled modules instead.
 * CommonJS on purpose: starting Node's ES module loader costs a short command a noticeable share of its time.
 */
import fs = require("node:fs");
import Module = require("node:module");
import path = require("node:path");
import vm = require("node:vm");
import cacheDir = require("./cache-dir.cjs");

interface Entry {
  main(argv: ReadonlyArray<string>, options: { readonly cacheDir?: string }): Promise<number>;
}

const bundle = path.join(__dirname, "context-ledger.cjs");

/**
 * Loads the bundle; returns it with a function that stores its compiled code when the cache had none. Each
 * command keeps its own file: V8's data holds what had been compiled when it was taken, so one file written after
 * `ingest` would lack most of `explain` (compiled again on every start), and one file holding every command's code
 * would make each command deserialize all of it.
 */
function loadBundle(dir: string | undefined): [Entry, (() => void) | undefined] {
  const load = Module.createRequire(bundle);
  const enable = (Module as { enableCompileCache?: (dir?: string) => unknown }).enableCompileCache;
  if (dir === undefined || enable !== undefined) {
    if (dir !== undefined) enable?.(dir);
    return [load(bundle) as Entry, undefined];
  }
  const { size, mtimeMs } = fs.statSync(bundle);
  const command = cacheDir.commandOf(process.argv.slice(2));
  const cacheFile = path.join(
    dir,
    `cli-${size}-${Math.trunc(mtimeMs)}-${process.version}-${process.arch}-${command}.v8`,
  );
  let cachedData: Buffer | undefined;
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {}
  // latin1: the build makes the bundle ASCII, and V8 then keeps it as one-byte text without decoding it.
  const script = new vm.Script(Module.wrap(fs.readFileSync(bundle, "latin1")), { filename: bundle, cachedData });
  const module = { exports: {} as Entry };
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper(module.exports, load, module, bundle, path.dirname(bundle));
  const save =
    cachedData === undefined || script.cachedDataRejected === true
      ? () => {
          writeAtomically(cacheFile, script.createCachedData());
          // A new bundle means a new build or install, which may bring new vocabulary and count files too; the
          // files of a dozen commands of the last two builds stay.
          cacheDir.pruneCacheFiles(dir, "cli-", 24);
          cacheDir.pruneCacheFiles(dir, "vocabulary-", 4);
          cacheDir.pruneCacheFiles(dir, "counts-", 4);
        }
      : undefined;
  return [module.exports, save];
}

function writeAtomically(file: string, data: Buffer): void {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, data, { mode: 0o600 });
    fs.renameSync(temp, file);
  } catch {
    try {
      fs.unlinkSync(temp);
    } catch {}
  }
}

async function run(): Promise<number> {
  const dir = cacheDir.cliCacheDir(process.env);
  if (!fs.existsSync(bundle)) {
    const { main } = (await import("./entry.js")) as Entry;
    return main(process.argv.slice(2), dir === undefined ? {} : { cacheDir: dir });
  }
  const [entry, save] = loadBundle(dir);
  const code = await entry.main(process.argv.slice(2), dir === undefined ? {} : { cacheDir: dir });
  save?.(); // after the run, so the functions the command compiled are in the cache too
  return code;
}

// exitCode rather than exit(): stdout (a large request body in a pipe) drains before the process ends.
run().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
