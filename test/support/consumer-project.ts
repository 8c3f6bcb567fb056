/**
 * A consumer project made from the packed package, as a user gets it: `npm pack` of a fresh build, installed into
 * an empty folder with the peers a user would add. The install is offline: its lockfile is cut from this
 * repository's own (same versions, same integrity hashes), so npm takes every tarball from the cache that
 * `npm ci` filled, and nothing is resolved against the registry.
 */
import { execFile, type SpawnSyncOptions, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { repoRoot } from "./repo-root.js";

/** One entry of a v2/v3 lockfile's `packages` table (the fields this module reads or writes). */
export interface LockEntry {
  readonly name?: string;
  readonly version?: string;
  readonly resolved?: string;
  readonly integrity?: string;
  readonly link?: boolean;
  readonly dev?: boolean;
  readonly optional?: boolean;
  readonly devOptional?: boolean;
  readonly peer?: boolean;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
  readonly [field: string]: unknown;
}

/** A lockfile's `packages` table: `""` is the project, `node_modules/a/node_modules/b` a nested package. */
export type LockPackages = Readonly<Record<string, LockEntry>>;

/** What `npm pack --json` says about the tarball it wrote. */
export interface PackedPackage {
  readonly tarball: string;
  readonly files: ReadonlyArray<string>;
  readonly manifest: PackageManifest;
}

/** The fields of a package.json this module reads. */
export interface PackageManifest {
  readonly name: string;
  readonly version: string;
  readonly license?: string;
  readonly bin?: Readonly<Record<string, string>>;
  readonly engines?: Readonly<Record<string, string>>;
  readonly exports?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly typesVersions?: Readonly<Record<string, Readonly<Record<string, ReadonlyArray<string>>>>>;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
}

/** npm settings a nested npm keeps from the environment: where its cache is and which registry it talks to. */
const KEPT_NPM_SETTINGS = new Set(["npm_config_cache", "npm_config_registry", "npm_config_userconfig"]);

/**
 * The environment without what `npm test` exports for its own project (`npm_config_*`, `npm_package_*`, …), so a
 * nested npm works on the project it is run in and never on this repository.
 */
export function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.toLowerCase().startsWith("npm_") || KEPT_NPM_SETTINGS.has(key.toLowerCase())) env[key] = value;
  }
  return env;
}

/** Runs a command to completion; throws with its output when it fails. */
export function run(command: string, args: ReadonlyArray<string>, options: SpawnSyncOptions): string {
  const result = spawnSync(command, args, { encoding: "utf8", ...options });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} (in ${String(options.cwd)}) exited with ${result.status ?? result.signal}:\n` +
        `${String(result.stdout)}\n${String(result.stderr)}`,
    );
  }
  return String(result.stdout);
}

/** The first `node_modules` folder Node would search from `dir` upwards, if any. */
function modulesAbove(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, "node_modules"))) return join(at, "node_modules");
    if (dirname(at) === at) return undefined;
  }
}

/**
 * A new temporary folder from which Node finds no packages: none of its parents holds a `node_modules` (a
 * `/tmp/node_modules` would lend a project the very packages it is meant to lack). Tries the system's temporary
 * folder, then `/var/tmp` and `/dev/shm`.
 */
export function isolatedTempDir(prefix: string): string {
  const bases = [tmpdir(), "/var/tmp", "/dev/shm"];
  for (const base of bases) {
    if (existsSync(base) && modulesAbove(base) === undefined) return mkdtempSync(join(base, prefix));
  }
  throw new Error(
    `every temporary folder sees packages from a node_modules above it: ${bases.map(modulesAbove).join(", ")}`,
  );
}

/** What a command run with {@link runAsync} printed and returned. */
export interface CommandRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command without blocking the test process (so several can run at once); never rejects. */
export function runAsync(command: string, args: ReadonlyArray<string>, cwd: string): Promise<CommandRun> {
  return new Promise((resolve) => {
    execFile(command, [...args], { cwd, encoding: "utf8", maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Builds the package from `src` into `stage/dist` as `npm run build` does, the CLI bundle included (never the repository's own `dist`, so a stale file there
 * cannot slip into the test) and packs it with npm into `into`.
 */
export function buildAndPack(stage: string, into: string): PackedPackage {
  mkdirSync(stage, { recursive: true });
  for (const file of ["package.json", "README.md", "LICENSE"]) {
    if (existsSync(join(repoRoot, file))) copyFileSync(join(repoRoot, file), join(stage, file));
  }
  const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");
  const config = join(repoRoot, "tsconfig.build.json");
  run(process.execPath, [tsc, "-p", config, "--outDir", join(stage, "dist")], { cwd: repoRoot });
  const tsx = join(repoRoot, "node_modules", "tsx", "dist", "cli.mjs");
  run(process.execPath, [tsx, join(repoRoot, "scripts", "bundle-cli.ts"), "--outdir", join(stage, "dist")], {
    cwd: repoRoot,
  });
  const out = run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", into], {
    cwd: stage,
    env: npmEnv(),
  });
  const [packed] = JSON.parse(out) as Array<{ filename: string; files: Array<{ path: string }> }>;
  if (packed === undefined) throw new Error(`npm pack printed no package: ${out}`);
  return {
    tarball: join(into, packed.filename),
    files: packed.files.map((f) => f.path).sort(),
    manifest: JSON.parse(readFileSync(join(stage, "package.json"), "utf8")) as PackageManifest,
  };
}

/** The lock path where Node finds `name` when a module of the package at `from` imports it (`""`: the project). */
export function locate(packages: LockPackages, from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = `${dir === "" ? "" : `${dir}/`}node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (dir === "") return undefined;
    const at = dir.lastIndexOf("node_modules/");
    dir = dir.slice(0, Math.max(0, at - 1));
  }
}

/** The names an installed package needs at run time: its dependencies, optional ones and required peers. */
function needs(entry: LockEntry): Array<{ readonly name: string; readonly optional: boolean }> {
  const optionalPeer = (name: string) => entry.peerDependenciesMeta?.[name]?.optional === true;
  return [
    ...Object.keys(entry.dependencies ?? {}).map((name) => ({ name, optional: false })),
    ...Object.keys(entry.optionalDependencies ?? {}).map((name) => ({ name, optional: true })),
    ...Object.keys(entry.peerDependencies ?? {})
      .filter((name) => !optionalPeer(name))
      .map((name) => ({ name, optional: false })),
  ];
}

/**
 * The part of `packages` that a project depending on `roots` (package names at the top level) loads, at the same
 * paths, so Node resolves every import in it as it does in the full tree. A needed package the table lacks is an
 * error, unless only an optional dependency asks for it (a platform build npm skips).
 */
export function lockSubset(
  packages: LockPackages,
  roots: ReadonlyArray<string>,
  extra: LockPackages = {},
): Record<string, LockEntry> {
  const all: LockPackages = { ...packages, ...extra };
  const kept: Record<string, LockEntry> = {};
  const queue: Array<{ from: string; name: string; optional: boolean }> = roots.map((name) => ({
    from: "",
    name,
    optional: false,
  }));
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const path = locate(all, next.from, next.name);
    if (path === undefined) {
      if (next.optional) continue;
      throw new Error(`the lockfile has no ${next.name} for ${next.from || "the project"}`);
    }
    if (kept[path] !== undefined) continue;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = all[path]!;
    kept[path] = entry;
    for (const need of needs(entry)) queue.push({ from: path, ...need });
  }
  return kept;
}

/** `sha512-…` of a file, as npm writes a tarball's integrity. */
function integrityOf(file: string): string {
  return `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
}

/** The lock entry of the packed package, installed from its tarball (a path relative to the project). */
function tarballEntry(packed: PackedPackage, relativeTarball: string): LockEntry {
  const m = packed.manifest;
  const entry: Record<string, unknown> = {
    version: m.version,
    resolved: `file:${relativeTarball}`,
    integrity: integrityOf(packed.tarball),
    license: m.license,
    dependencies: m.dependencies,
    bin: m.bin,
    engines: m.engines,
    peerDependencies: m.peerDependencies,
    peerDependenciesMeta: m.peerDependenciesMeta,
  };
  for (const key of Object.keys(entry)) if (entry[key] === undefined) delete entry[key];
  return entry as LockEntry;
}

/** What {@link installConsumer} made. */
export interface ConsumerInstall {
  /** The lock paths installed (`node_modules/…`), the packed package included. */
  readonly installed: ReadonlyArray<string>;
  /** How npm installed: from the cache only, or (when that failed) allowed to reach the registry. */
  readonly mode: "offline" | "prefer-offline";
}

/**
 * Installs the packed package and `peers` (names this repository depends on; same versions as its lockfile) into
 * the empty project `dir`, without install scripts; better-sqlite3's native module is copied from this
 * repository's build (same version), so nothing is compiled or downloaded.
 */
export function installConsumer(
  dir: string,
  packed: PackedPackage,
  peers: ReadonlyArray<string>,
): ConsumerInstall {
  const repoLock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as {
    packages: LockPackages;
  };
  const name = packed.manifest.name;
  const relativeTarball = "package.tgz";
  copyFileSync(packed.tarball, join(dir, relativeTarball));
  const own = { [`node_modules/${name}`]: tarballEntry(packed, relativeTarball) };
  const subset = lockSubset(repoLock.packages, [name, ...peers], own);
  const dependencies: Record<string, string> = { [name]: `file:${relativeTarball}` };
  for (const peer of peers) {
    const version = subset[`node_modules/${peer}`]?.version;
    if (version === undefined) throw new Error(`the lockfile has no version of ${peer}`);
    dependencies[peer] = version;
  }
  const manifest = { name: "consumer", version: "1.0.0", private: true, type: "module", dependencies };
  const lock = {
    name: manifest.name,
    version: manifest.version,
    lockfileVersion: 3,
    requires: true,
    packages: { "": { name: manifest.name, version: manifest.version, dependencies }, ...subset },
  };
  writeJson(join(dir, "package.json"), manifest);
  writeJson(join(dir, "package-lock.json"), lock);
  const flags = ["--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"];
  let mode: ConsumerInstall["mode"] = "offline";
  const env = npmEnv();
  const offline = spawnSync("npm", ["ci", "--offline", ...flags], { cwd: dir, env, encoding: "utf8" });
  if (offline.status !== 0) {
    // A cache that lacks a tarball (another npm cache folder, a pruned cache): fetch what is missing.
    mode = "prefer-offline";
    run("npm", ["ci", "--prefer-offline", ...flags], { cwd: dir, env });
  }
  copyNativeSqlite(dir);
  return { installed: Object.keys(subset).sort(), mode };
}

function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`, "utf8");
}

/**
 * Copies better-sqlite3's compiled module from this repository into the project's copy of the same version (the
 * install ran without scripts, which would download or compile it).
 */
function copyNativeSqlite(dir: string): void {
  const target = join(dir, "node_modules", "better-sqlite3");
  if (!existsSync(target)) return;
  const source = join(repoRoot, "node_modules", "better-sqlite3");
  const version = (d: string) =>
    (JSON.parse(readFileSync(join(d, "package.json"), "utf8")) as { version: string }).version;
  if (version(source) !== version(target)) {
    throw new Error(
      `better-sqlite3 ${version(target)} in the consumer, ${version(source)} in the repository`,
    );
  }
  const built = join(source, "build", "Release", "better_sqlite3.node");
  mkdirSync(join(target, "build", "Release"), { recursive: true });
  copyFileSync(built, join(target, "build", "Release", "better_sqlite3.node"));
}

/** Packages and bytes on disk under a `node_modules` folder (each package.json of a package counts once). */
export function measureModules(modules: string): { readonly packages: number; readonly bytes: number } {
  let packages = 0;
  let bytes = 0;
  const walk = (dir: string, packageLevel: boolean) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) {
        if (packageLevel && entry.name.startsWith("@")) {
          walk(path, true);
        } else if (packageLevel) {
          if (!entry.name.startsWith(".")) packages++;
          walk(path, false);
        } else {
          walk(path, entry.name === "node_modules");
        }
      } else if (entry.isFile()) {
        bytes += statSync(path).size;
      }
    }
  };
  walk(modules, true);
  return { packages, bytes };
}
