/**
 * What the `context-ledger` executable runs, whichever way it was started (`bin.cts` with the bundled file the
 * package ships, or `main.ts` under tsx): the per-user cache is wired in, then the command runs. Tests call
 * `runCli` directly and so run without the cache.
 */
import * as z from "zod";
import { flushCountStores } from "../tokens/count-store.js";
import { useVocabularyCache } from "../tokens/vocabulary-cache.js";
import { runCli } from "./cli.js";
import { processIo } from "./cli-io.js";

/** Options of {@link main}. */
export interface MainOptions {
  /** The per-user cache directory (see `cache-dir.cts`); without it nothing is cached. */
  readonly cacheDir?: string;
}

/** Runs one command with the process's streams; returns the exit code. */
export async function main(argv: ReadonlyArray<string>, options: MainOptions = {}): Promise<number> {
  // A command parses each schema a few times at most: zod's compiled fast path (code generated per object schema
  // on its first parse) costs more than it saves in a process this short.
  z.config({ jitless: true });
  useVocabularyCache(options.cacheDir);
  try {
    return await runCli([...argv], processIo());
  } finally {
    flushCountStores(); // the texts this command counted, for the next one
  }
}
