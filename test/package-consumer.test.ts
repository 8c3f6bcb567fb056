/**
 * The package as a user installs it: `npm pack` of a fresh build, installed into empty projects — one with the
 * package alone ("core"), one that adds the AI SDK, TypeScript and Node's types ("full") — and used from there:
 * its executable, every entry point by import() and require(), a consumer type-checked under `nodenext`, `bundler`
 * and `node10` resolution, an AI SDK tool loop on the SDK's mock model through `context-ledger/ai-sdk`, and the
 * optional peers the core project lacks failing with `MissingDependencyError`. Nothing comes from `src`: the
 * projects see only the tarball.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import Module from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildAndPack,
  type ConsumerInstall,
  installConsumer,
  isolatedTempDir,
  measureModules,
  type PackedPackage,
  run,
  runAsync,
} from "./support/consumer-project.js";
import { repoRoot } from "./support/repo-root.js";

const FIXTURE = join(repoRoot, "test", "fixtures", "consumer");
/** What the "full" project adds to the package: what a user of the ai-sdk wing writing TypeScript has. */
const FULL_PEERS = ["ai", "typescript", "@types/node"] as const;
/** The entry points that load their peer with top-level await when imported, so require() cannot load them. */
const AWAITING_ENTRIES = ["context-ledger/ai-sdk", "context-ledger/langchain"];
/** Most packages the core project may hold (the package and what its five dependencies pull in). */
const MOST_CORE_PACKAGES = 45;

/** Whether this Node.js loads ES modules with require() unflagged (20.19+, 22.12+, 23+). */
function requiresEsm(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major >= 23 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19);
}

let work: string;
let packed: PackedPackage;
let core: string;
let full: string;
let coreInstall: ConsumerInstall;

/** Runs `node` in a project; the JSON printed on stdout's last line. */
function nodeJson<T>(cwd: string, args: ReadonlyArray<string>): T {
  const out = run(process.execPath, args, { cwd }).trim().split("\n");
  return JSON.parse(out[out.length - 1] ?? "null") as T;
}

const entryNames = () => Object.keys(packed.manifest.exports ?? {}).map((k) => join(packed.manifest.name, k));

interface Probe {
  readonly exports?: ReadonlyArray<string>;
  readonly error?: { readonly name?: string; readonly code?: string; readonly packageName?: string };
}

beforeAll(() => {
  work = isolatedTempDir("cl-consumer-");
  packed = buildAndPack(join(work, "stage"), work);
  core = join(work, "core");
  full = join(work, "full");
  mkdirSync(core);
  mkdirSync(full);
  coreInstall = installConsumer(core, packed, []);
  installConsumer(full, packed, FULL_PEERS);
  for (const dir of [core, full]) cpSync(FIXTURE, dir, { recursive: true });
}, 300_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("the tarball", () => {
  it("holds the build, package.json, README and LICENSE; no tests, sources or stray source maps", () => {
    const files = packed.files;
    expect(files).toContain("LICENSE");
    expect(files).toContain("README.md");
    expect(files).toContain("package.json");
    const outside = files.filter(
      (f) => !f.startsWith("dist/") && !["LICENSE", "README.md", "package.json"].includes(f),
    );
    expect(outside).toEqual([]);
    expect(
      files.filter((f) => /(^|\/)(tests?|__tests__|fixtures)\/|\.(test|spec)\.|\.tsbuildinfo$/.test(f)),
    ).toEqual([]);
    expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    // A source map is worth shipping only with the sources it points to.
    for (const map of files.filter((f) => f.endsWith(".map"))) {
      const sources = (JSON.parse(readFileSync(join(work, "stage", map), "utf8")) as { sources: string[] })
        .sources;
      for (const source of sources) expect(files, `${map} → ${source}`).toContain(join(map, "..", source));
    }
    expect(readFileSync(join(work, "stage", "LICENSE"), "utf8")).toMatch(/MIT License/);
  });

  it("holds every file the exports map, typesVersions and bin name, and each entry has types beside its code", () => {
    const { exports = {}, typesVersions = {}, bin = {} } = packed.manifest;
    const named = [
      ...Object.values(exports).flatMap((conditions) => Object.values(conditions)),
      ...Object.values(typesVersions).flatMap((paths) => Object.values(paths).flat()),
      ...Object.values(bin),
    ].map((path) => path.replace(/^\.\//, ""));
    expect(named.length).toBeGreaterThan(20);
    for (const path of named) expect(packed.files, path).toContain(path);
    for (const [entry, conditions] of Object.entries(exports)) {
      expect(conditions.types?.replace(/\.d\.ts$/, ".js"), entry).toBe(conditions.import);
      if (entry === ".") continue;
      // node10 resolution finds each subpath's types through typesVersions.
      const mapped = typesVersions["*"]?.[entry.slice(2)];
      expect(
        mapped?.map((p) => `./${p}`),
        entry,
      ).toEqual([conditions.types]);
    }
    const [executable] = Object.values(bin);
    expect(readFileSync(join(work, "stage", executable ?? ""), "utf8")).toMatch(/^#!\/usr\/bin\/env node\n/);
  });
});

describe("a project with only context-ledger", () => {
  it(`stays light: at most ${MOST_CORE_PACKAGES} packages`, () => {
    const { packages, bytes } = measureModules(join(core, "node_modules"));
    console.info(
      `core consumer (npm ci --${coreInstall.mode}): ${packages} packages, ${(bytes / 1e6).toFixed(1)} MB`,
    );
    expect(packages).toBe(coreInstall.installed.length);
    expect(packages).toBeLessThanOrEqual(MOST_CORE_PACKAGES);
  });

  it("runs the executable: --help, and the demo end to end on a SQLite file", () => {
    const bin = join(core, "node_modules", ".bin", "context-ledger");
    const help = run(bin, ["--help"], { cwd: core });
    expect(help).toMatch(/^usage: context-ledger <command>/);
    const demo = JSON.parse(run(bin, ["demo", "--json", "--db", join(work, "demo.db")], { cwd: core })) as {
      turns: ReadonlyArray<{ valid: boolean; compacted: boolean }>;
    };
    expect(demo.turns.length).toBeGreaterThan(0);
    expect(demo.turns.every((t) => t.valid)).toBe(true);
    expect(demo.turns.some((t) => t.compacted)).toBe(true);
  });

  it("runs the bundled executable the same with its cache cold, warm and off", () => {
    expect(packed.files).toContain("dist/cli/context-ledger.cjs");
    expect(packed.files).toContain("dist/cli/THIRD-PARTY-LICENSES.txt");
    const bin = join(core, "node_modules", ".bin", "context-ledger");
    const db = join(work, "demo.db"); // the demo above left a compacted thread there
    const cache = join(work, "cli-cache");
    const explain = (env: Record<string, string>): string =>
      run(bin, ["explain", "--thread", "demo", "--json", "--db", db], {
        cwd: core,
        env: { ...process.env, ...env },
      });
    run(bin, ["--help"], { cwd: core, env: { ...process.env, CONTEXT_LEDGER_CACHE_DIR: cache } });
    const cold = explain({ CONTEXT_LEDGER_CACHE_DIR: cache });
    const files = readdirSync(cache).sort();
    // V8's compiled code of the bundle: our own file on Node 20, Node's compile-cache folder on 22 and later.
    const hasCompileCache =
      typeof (Module as { enableCompileCache?: unknown }).enableCompileCache === "function";
    // One file per command: --help's and explain's.
    if (!hasCompileCache) {
      expect(files.filter((f) => /^cli-.*\.v8$/.test(f)).map((f) => f.split(`-${process.arch}-`)[1])).toEqual(
        ["-.v8", "explain.v8"],
      );
    }
    expect(files.some((f) => /^vocabulary-o200k_base-.*\.bin$/.test(f))).toBe(true);
    expect(files.some((f) => /^counts-o200k_base-.*\.bin$/.test(f))).toBe(true);
    expect(explain({ CONTEXT_LEDGER_CACHE_DIR: cache })).toBe(cold);
    expect(explain({ CONTEXT_LEDGER_CACHE: "off" })).toBe(cold);
  });

  it("runs better-sqlite3's JavaScript from the bundle, and the installed package when its version differs", () => {
    const bin = join(core, "node_modules", "context-ledger", "dist", "cli", "bin.cjs");
    const db = join(work, "demo.db");
    const probe = join(work, "sqlite-probe.cjs");
    // Which better-sqlite3 JavaScript the process loaded from node_modules (none when the bundle's copy ran).
    writeFileSync(
      probe,
      'process.on("exit", () => process.stderr.write("loaded: " + Object.keys(require.cache)' +
        '.filter((f) => /better-sqlite3[\\\\/]lib[\\\\/]database\\.js$/.test(f)).length + "\\n"));\n',
    );
    const explain = (): { stdout: string; loaded: string | undefined } => {
      const result = spawnSync(
        process.execPath,
        ["--require", probe, bin, "explain", "--thread", "demo", "--json", "--db", db],
        { cwd: core, encoding: "utf8", env: { ...process.env, CONTEXT_LEDGER_CACHE: "off" } },
      );
      expect(result.status, result.stderr).toBe(0);
      return { stdout: result.stdout, loaded: /loaded: (\d+)/.exec(result.stderr)?.[1] };
    };
    const bundled = explain();
    expect(bundled.loaded).toBe("0");
    const manifestFile = join(core, "node_modules", "better-sqlite3", "package.json");
    const manifest = readFileSync(manifestFile, "utf8");
    try {
      writeFileSync(manifestFile, manifest.replace(/"version":\s*"[^"]+"/, '"version": "0.0.0-another"'));
      const installed = explain();
      expect(installed.loaded).toBe("1");
      expect(installed.stdout).toBe(bundled.stdout);
    } finally {
      writeFileSync(manifestFile, manifest);
    }
  });

  it("imports every entry point; those whose peer is absent fail naming it", () => {
    const report = nodeJson<Record<string, Probe>>(core, ["probe-entries.mjs", ...entryNames()]);
    const needsPeer: Record<string, string> = {
      "context-ledger/ai-sdk": "ai",
      "context-ledger/langchain": "@langchain/core",
    };
    for (const entry of entryNames()) {
      const peer = needsPeer[entry];
      if (peer === undefined) {
        expect(report[entry]?.exports?.length, entry).toBeGreaterThan(0);
      } else {
        expect(report[entry]?.error, entry).toMatchObject({ code: "MISSING_DEPENDENCY", packageName: peer });
      }
    }
  });

  it("fails with MissingDependencyError naming the package when an optional peer is used but absent", () => {
    const report = nodeJson<
      Record<string, { missingDependency?: boolean; packageName?: string; message?: string }>
    >(core, ["probe-peers.mjs"]);
    expect(Object.keys(report).sort()).toEqual(
      ["@anthropic-ai/sdk", "@langchain/core", "@opentelemetry/api", "ai", "openai", "pg"].sort(),
    );
    for (const [peer, outcome] of Object.entries(report)) {
      expect(outcome.missingDependency, peer).toBe(true);
      expect(outcome.packageName, peer).toBe(peer);
      expect(outcome.message, peer).toContain(`npm install ${peer}`);
    }
  });
});

describe("a project with context-ledger, the AI SDK and TypeScript", () => {
  const tsc = (config: string) =>
    runAsync(process.execPath, [join("node_modules", "typescript", "bin", "tsc"), "-p", config], full);
  let nodenext: Promise<Awaited<ReturnType<typeof tsc>>> | undefined;
  /** The `nodenext` check, which also emits the consumer's JavaScript into `out/` (run by the tests below). */
  const compiled = () => {
    nodenext ??= tsc("tsconfig.nodenext.json");
    return nodenext;
  };

  it("type-checks a consumer under nodenext, bundler and node10 resolution (node10 through typesVersions)", async () => {
    const [next, bundler, node10] = await Promise.all([
      compiled(),
      tsc("tsconfig.bundler.json"),
      tsc("tsconfig.node10.json"),
    ]);
    expect(next.stdout + next.stderr, "nodenext").toBe("");
    expect(bundler.stdout + bundler.stderr, "bundler").toBe("");
    expect(node10.stdout + node10.stderr, "node10").toBe("");
    expect([next.code, bundler.code, node10.code]).toEqual([0, 0, 0]);
  });

  it("runs an AI SDK tool loop on the mock model through context-ledger/ai-sdk, every prompt within budget", async () => {
    expect((await compiled()).code).toBe(0);
    const runDir = join(work, "turn");
    mkdirSync(runDir);
    const result = nodeJson<{
      budget: number;
      steps: ReadonlyArray<{ promptTokens: number; toolTokens: number; compacted: boolean }>;
      historyTokens: number;
      text: string;
    }>(full, [join("out", "turn.js"), runDir]);
    expect(result.text).toBe("All files read.");
    expect(result.steps).toHaveLength(8);
    // The conversation outgrew the budget, so the engine had to compact it for the model to stay within.
    expect(result.historyTokens).toBeGreaterThan(2 * result.budget);
    expect(result.steps.some((s) => s.compacted)).toBe(true);
    for (const [i, step] of result.steps.entries()) {
      expect(step.promptTokens + step.toolTokens, `step ${i + 1}`).toBeLessThanOrEqual(result.budget);
      expect(step.promptTokens, `step ${i + 1}`).toBeGreaterThan(0);
    }
  });

  it("imports every entry point but LangChain's (its peers are not installed here)", () => {
    const report = nodeJson<Record<string, Probe>>(full, ["probe-entries.mjs", ...entryNames()]);
    for (const entry of entryNames()) {
      if (entry === "context-ledger/langchain") {
        expect(report[entry]?.error?.packageName).toBe("@langchain/core");
      } else {
        expect(report[entry]?.exports?.length, entry).toBeGreaterThan(0);
      }
    }
  });

  it.skipIf(!requiresEsm(process.versions.node))(
    requiresEsm(process.versions.node)
      ? "require() loads every entry point but the two that await their peer"
      : `require() of the entry points: skipped, Node ${process.versions.node} has no require(esm) (20.19+, 22.12+)`,
    async () => {
      const report = nodeJson<Record<string, Probe>>(full, [
        "probe-entries.mjs",
        "--require",
        ...entryNames(),
      ]);
      for (const entry of entryNames()) {
        if (AWAITING_ENTRIES.includes(entry)) {
          expect(report[entry]?.error?.code, entry).toBe("ERR_REQUIRE_ASYNC_MODULE");
        } else {
          expect(report[entry]?.exports?.length, entry).toBeGreaterThan(0);
        }
      }
      // A CommonJS consumer written in TypeScript (`import x = require(…)`), compiled under nodenext.
      expect((await compiled()).code).toBe(0);
      expect(nodeJson(full, [join("out", "require-core.cjs")])).toEqual({
        engine: "function",
        error: "function",
      });
    },
  );
});
