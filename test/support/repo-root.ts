import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: the nearest folder above this file whose package.json is context-ledger's. */
function findRepoRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "context-ledger"
    ) {
      return dir;
    }
    if (dirname(dir) === dir) throw new Error(`no context-ledger package.json above ${start}`);
  }
}

/** Works from the sources (tsx, vitest) and from compiled copies in a build folder alike. */
export const repoRoot: string = findRepoRoot(dirname(fileURLToPath(import.meta.url)));
