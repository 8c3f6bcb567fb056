import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../test/support/repo-root.js";

const PACKAGES = ["context-ledger", "@langchain/core", "@mastra/core", "ai"] as const;

/** The installed version of each system under test, read from its package.json. */
export function versionOf(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pkg of PACKAGES) {
    const path = join(repoRoot, pkg === "context-ledger" ? "" : `node_modules/${pkg}`, "package.json");
    out[pkg] = (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
  }
  return out;
}
