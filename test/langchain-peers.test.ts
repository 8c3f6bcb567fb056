/**
 * `@langchain/core` and `langchain` are optional peer dependencies: without them the package works, and
 * importing `context-ledger/langchain` fails naming the package to install. Proved with real Node module
 * resolution: a copy of `src` next to a `node_modules` that lacks the package, run in a separate process.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MissingDependencyError } from "../src/errors/ledger-error.js";
import { loadPeer } from "../src/integrations/langchain/peer-modules.js";
import { isolatedTempDir } from "./support/consumer-project.js";
import { repoRoot } from "./support/repo-root.js";

const modules = join(repoRoot, "node_modules");
let root: string;

/**
 * The test project (a copy of `src`, made once so that tsx's transform cache serves every run), with a
 * `node_modules` of links to ours without the `hidden` entries.
 */
function projectWithout(hidden: ReadonlyArray<string>): string {
  const target = join(root, "node_modules");
  rmSync(target, { recursive: true, force: true });
  mkdirSync(join(target, "@langchain"), { recursive: true });
  for (const entry of readdirSync(modules)) {
    if (entry === "@langchain") {
      for (const scoped of readdirSync(join(modules, entry))) {
        const name = `@langchain/${scoped}`;
        if (!hidden.includes(name)) symlinkSync(join(modules, name), join(target, name));
      }
    } else if (!hidden.includes(entry) && !entry.startsWith(".")) {
      symlinkSync(join(modules, entry), join(target, entry));
    }
  }
  return root;
}

/**
 * Imports the project's `entries` one after the other in a new Node process (TypeScript through tsx), printing
 * the export names of each; its exit code, stdout and stderr.
 */
function importIn(
  dir: string,
  entries: ReadonlyArray<string>,
): { status: number | null; stderr: string; stdout: string } {
  const urls = entries.map((entry) => pathToFileURL(join(dir, entry)).href);
  const script = `for (const url of ${JSON.stringify(urls)}) console.log(Object.keys(await import(url)).sort().join(","));`;
  const tsx = pathToFileURL(join(modules, "tsx", "dist", "loader.mjs")).href;
  const run = spawnSync(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], {
    cwd: dir,
    encoding: "utf8",
    timeout: 30_000,
  });
  return { status: run.status, stderr: run.stderr, stdout: run.stdout };
}

const MAIN = "src/index.ts";
const WING = "src/integrations/langchain/index.ts";

beforeAll(() => {
  root = isolatedTempDir("cl-langchain-peers-");
  cpSync(join(repoRoot, "src"), join(root, "src"), { recursive: true });
  writeFileSync(join(root, "package.json"), '{ "type": "module" }\n');
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("optional LangChain peers", () => {
  it.each([
    ["@langchain/core", ["@langchain/core"]],
    ["langchain", ["langchain"]],
  ])("without %s, the main entry loads and importing the subpath fails naming it", (name, hidden) => {
    const run = importIn(projectWithout(hidden), [MAIN, WING]);
    expect(run.stdout).toContain("createContextEngine");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain("MissingDependencyError");
    expect(run.stderr).toContain(`needs the package ${name},`);
    expect(run.stderr).toContain(`npm install ${name}`);
  });

  it("loadPeer passes other failures through unchanged", async () => {
    const broken = new SyntaxError("Unexpected token in @langchain/core/messages");
    await expect(loadPeer(() => Promise.reject(broken), "@langchain/core")).rejects.toBe(broken);
    const missing = Object.assign(new Error("Cannot find package 'langchain' imported from /x.js"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    await expect(loadPeer(() => Promise.reject(missing), "@langchain/core")).rejects.toBe(missing);
    await expect(loadPeer(() => Promise.reject(missing), "langchain")).rejects.toBeInstanceOf(
      MissingDependencyError,
    );
    // langchain failing because @langchain/core is missing names @langchain/core, not langchain.
    const coreMissing = Object.assign(
      new Error(
        "Cannot find package '@langchain/core' imported from /app/node_modules/langchain/dist/index.js",
      ),
      { code: "ERR_MODULE_NOT_FOUND" },
    );
    await expect(loadPeer(() => Promise.reject(coreMissing), "langchain")).rejects.toBe(coreMissing);
    const old = Object.assign(
      new Error(
        "Package subpath './messages' is not defined by \"exports\" in /app/node_modules/@langchain/core/package.json",
      ),
      { code: "ERR_PACKAGE_PATH_NOT_EXPORTED" },
    );
    await expect(loadPeer(() => Promise.reject(old), "@langchain/core")).rejects.toThrow(
      /npm install @langchain\/core/,
    );
  });

  it("nothing else in src imports the LangChain wing", () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (path !== join(repoRoot, "src", "integrations", "langchain")) walk(path);
        } else if (entry.name.endsWith(".ts")) {
          const text = readFileSync(path, "utf8");
          if (/from "[^"]*integrations\/langchain|@langchain\/|from "langchain"/.test(text))
            offenders.push(path);
        }
      }
    };
    walk(join(repoRoot, "src"));
    expect(offenders).toEqual([]);
  });
});
