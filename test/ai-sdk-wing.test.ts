/**
 * `context-ledger/ai-sdk` is a wing: `ai` is an optional peer dependency that only this entry point loads (a clear
 * error when it is missing), the wing uses the core through its public entry points only, and nothing in the core
 * imports the wing.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAi } from "../src/integrations/ai-sdk/load-ai.js";
import { repoRoot } from "./support/repo-root.js";

const WING = join(repoRoot, "src", "integrations", "ai-sdk");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The module specifiers a file imports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["']([^"']+)["']/g)].map((m) => m[1]!);
}

describe("the ai-sdk wing", () => {
  it("importing it without the ai package fails with an error naming the package to install", () => {
    const dir = mkdtempSync(join(tmpdir(), "cl-no-ai-"));
    try {
      // A resolve hook that answers "ai" as Node does when the package is not installed.
      const hook = [
        "export async function resolve(specifier, context, next) {",
        '  if (specifier === "ai" || specifier.startsWith("ai/")) {',
        '    const error = new Error("Cannot find package \'" + specifier + "\' imported from " + context.parentURL);',
        '    error.code = "ERR_MODULE_NOT_FOUND";',
        "    throw error;",
        "  }",
        "  return next(specifier, context);",
        "}",
      ].join("\n");
      const register = join(dir, "no-ai.mjs");
      writeFileSync(
        register,
        `import { register } from "node:module";\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});\n`,
      );
      const entry = join(WING, "index.ts");
      const run = (extra: string[]) =>
        spawnSync(
          process.execPath,
          ["--import", "tsx", ...extra, "-e", `await import(${JSON.stringify(entry)})`],
          {
            cwd: repoRoot,
            encoding: "utf8",
          },
        );
      const missing = run(["--import", register]);
      expect(missing.status).not.toBe(0);
      expect(missing.stderr).toContain("context-ledger/ai-sdk needs the package ai,");
      expect(missing.stderr).toContain("npm install ai");
      // The same import with the package present succeeds.
      const present = run([]);
      expect(present.stderr).toBe("");
      expect(present.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("any other failure to load ai is passed on as it is", async () => {
    const broken = Object.assign(new Error("Cannot find package 'zod' imported from ai"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    await expect(loadAi(() => Promise.reject(broken))).rejects.toBe(broken);
    const other = new SyntaxError("Unexpected token");
    await expect(loadAi(() => Promise.reject(other))).rejects.toBe(other);
  });

  it("uses the core through its public entry points only, and the core never imports it", () => {
    for (const file of sourceFiles(WING)) {
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith(".")) continue;
        const inWing = specifier.startsWith("./");
        const publicEntry = ["../../index.js", "../../extend.js"].includes(specifier);
        // The wings' shared modules (src/integrations/*.ts), which in turn use the public entry points only.
        const shared = /^\.\.\/[a-z-]+\.js$/.test(specifier);
        const testSupport = file.endsWith(".test.ts") && specifier.includes("/test/support/");
        expect(
          inWing || publicEntry || shared || testSupport,
          `${relative(repoRoot, file)} imports ${specifier}`,
        ).toBe(true);
      }
    }
    const sharedModules = readdirSync(join(repoRoot, "src/integrations"))
      .filter((name) => name.endsWith(".ts"))
      .map((name) => join(repoRoot, "src/integrations", name));
    expect(sharedModules.length).toBeGreaterThan(0);
    for (const file of sharedModules) {
      for (const specifier of importsOf(file).filter((s) => s.startsWith("."))) {
        expect(["../index.js", "../extend.js"], `${relative(repoRoot, file)} imports ${specifier}`).toContain(
          specifier,
        );
      }
    }
    const core = sourceFiles(join(repoRoot, "src")).filter((f) => !f.startsWith(WING));
    expect(core.length).toBeGreaterThan(100);
    for (const file of core) {
      if (sharedModules.includes(file)) continue;
      const reaches = importsOf(file).some((s) => s.includes("integrations/"));
      expect(reaches, `${relative(repoRoot, file)} imports the ai-sdk wing`).toBe(false);
    }
  });

  it("declares ai as an optional peer dependency and exports the entry point", () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
    expect(pkg.peerDependencies.ai).toMatch(/^\^6\./);
    expect(pkg.peerDependenciesMeta.ai).toEqual({ optional: true });
    expect(pkg.devDependencies.ai).toBeDefined();
    expect(pkg.dependencies.ai).toBeUndefined();
    expect(pkg.exports["./ai-sdk"]).toEqual({
      types: "./dist/integrations/ai-sdk/index.d.ts",
      import: "./dist/integrations/ai-sdk/index.js",
      default: "./dist/integrations/ai-sdk/index.js",
    });
  });
});
