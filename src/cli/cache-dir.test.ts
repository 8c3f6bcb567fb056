import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import cacheDir from "./cache-dir.cjs";

const { cliCacheDir, pruneCacheFiles } = cacheDir;

describe("cliCacheDir", () => {
  const roots: string[] = [];
  const root = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "cl-cache-"));
    roots.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("makes the chosen directory private to the user", () => {
    const dir = join(root(), "cache");
    expect(cliCacheDir({ CONTEXT_LEDGER_CACHE_DIR: dir })).toBe(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(cliCacheDir({ CONTEXT_LEDGER_CACHE_DIR: dir })).toBe(dir); // and reuses it
  });

  it("defaults to a per-user folder in the temporary directory", () => {
    const dir = cliCacheDir({});
    expect(dir).toBe(join(tmpdir(), `context-ledger-${process.getuid?.() ?? "user"}`));
  });

  it("is off when asked, and refuses places others could write or redirect", () => {
    const base = root();
    expect(
      cliCacheDir({ CONTEXT_LEDGER_CACHE: "off", CONTEXT_LEDGER_CACHE_DIR: join(base, "a") }),
    ).toBeUndefined();
    const open = join(base, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    expect(cliCacheDir({ CONTEXT_LEDGER_CACHE_DIR: open })).toBeUndefined();
    const target = join(base, "target");
    mkdirSync(target, { mode: 0o700 });
    symlinkSync(target, join(base, "link"));
    expect(cliCacheDir({ CONTEXT_LEDGER_CACHE_DIR: join(base, "link") })).toBeUndefined();
    writeFileSync(join(base, "file"), "");
    expect(cliCacheDir({ CONTEXT_LEDGER_CACHE_DIR: join(base, "file") })).toBeUndefined();
    expect(cliCacheDir({ CONTEXT_LEDGER_CACHE_DIR: join(base, "missing", "deeper") })).toBeUndefined();
  });

  it("prunes all but the newest files of a kind", () => {
    const dir = root();
    for (let i = 0; i < 6; i++) {
      writeFileSync(join(dir, `cli-${i}.v8`), "");
      utimesSync(join(dir, `cli-${i}.v8`), 1000 + i, 1000 + i);
    }
    writeFileSync(join(dir, "vocabulary-x.bin"), "");
    pruneCacheFiles(dir, "cli-", 2);
    expect(readdirSync(dir).sort()).toEqual(["cli-4.v8", "cli-5.v8", "vocabulary-x.bin"]);
  });
});

describe("the compiled-code file of a run", () => {
  const { commandOf } = cacheDir;

  it("is named by the run's command word, options and oddities by one name", () => {
    expect(commandOf(["explain", "--thread", "t"])).toBe("explain");
    expect(commandOf(["--help"])).toBe("-");
    expect(commandOf([])).toBe("-");
    expect(commandOf(["../../etc"])).toBe("-");
    expect(commandOf(["x".repeat(40)])).toBe("-");
  });
});
