import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./support/repo-root.js";

interface ExportTarget {
  readonly types: string;
  readonly import: string;
}

const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  exports: Record<string, ExportTarget>;
};

/** The source file a built entry point comes from (`./dist/a/b.js` → `src/a/b.ts`). */
const sourceOf = (built: string) =>
  join(repoRoot, built.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"));

describe("package entry points", () => {
  it.each(Object.entries(pkg.exports))(
    "%s is built from a source module that exports something",
    async (_, target) => {
      expect(target.types.replace(/\.d\.ts$/, ".js")).toBe(target.import);
      const source = sourceOf(target.import);
      expect(existsSync(source), source).toBe(true);
      const mod = (await import(source)) as Record<string, unknown>;
      expect(Object.keys(mod).length).toBeGreaterThan(0);
    },
  );

  it("the main entry point leaves the insides to `extend` and the sample sessions to `sample`", async () => {
    const main = (await import("../src/index.js")) as Record<string, unknown>;
    const extend = (await import("../src/extend.js")) as Record<string, unknown>;
    const sample = (await import("../src/sample/index.js")) as Record<string, unknown>;
    for (const name of ["resolveForLog", "decisionAt", "sha256Hex", "CHECKPOINTS_KEPT", "salientLines"]) {
      expect(main[name], name).toBeUndefined();
      expect(typeof extend[name], name).not.toBe("undefined");
    }
    expect(main.generateSampleSession).toBeUndefined();
    expect(typeof sample.generateSampleSession).toBe("function");
    // ThreadLog is a type and its factories (an object), not a class.
    expect(typeof (main.ThreadLog as { from?: unknown } | undefined)?.from).toBe("function");
    for (const name of ["createContextEngine", "renderPrompt", "createDefaultPipeline", "parseTranscript"]) {
      expect(typeof main[name], name).toBe("function");
    }
  });
});
