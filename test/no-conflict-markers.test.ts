/** No merge-conflict markers slip into the repository's own text files (docs, sources, configs). */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./support/repo-root.js";

describe("repository text", () => {
  it("holds no merge-conflict markers", () => {
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: repoRoot, encoding: "utf8" })
      .split("\0")
      .filter((f) => /\.(ts|md|json|ya?ml|mjs|cjs|html|css|sh)$/.test(f) || f === ".ci/run");
    const marked = files.filter((f) => {
      let text: string;
      try {
        text = readFileSync(join(repoRoot, f), "utf8");
      } catch {
        return false;
      }
      return /^(<{7}|>{7}) /m.test(text);
    });
    expect(marked).toEqual([]);
  });
});
