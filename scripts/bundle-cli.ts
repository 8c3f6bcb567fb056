/**
 * Bundles the CLI into one CommonJS file, `dist/cli/context-ledger.cjs` (run by `dist/cli/bin.js`), so a command
 * loads one file whose compiled code the CLI can cache, instead of resolving and compiling some two hundred
 * modules on every start. Optional packages and native code stay outside (loaded from node_modules as usual);
 * better-sqlite3's JavaScript is bundled in (see {@link sqliteDriver}); the licences of the packages bundled in are
 * written beside it.
 *
 * Run by `npm run build`, after `tsc` has emitted the rest of `dist/`; `--outdir DIR` bundles into another
 * build folder (the package test builds into a temporary one).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build, type Plugin } from "esbuild";

const root = join(import.meta.dirname, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  peerDependencies?: Record<string, string>;
};
const external = ["bindings", "playwright-core", ...Object.keys(manifest.peerDependencies ?? {})];
const { values } = parseArgs({ options: { outdir: { type: "string" } } });
const dist = resolve(values.outdir ?? join(root, "dist"));
const outfile = join(dist, "cli/context-ledger.cjs");

/**
 * zod re-exports every message locale (some 300 KB, a quarter of the bundle) through `z.locales`; the library
 * only ever speaks English, so the bundle carries that one and a command reads and deserializes less code.
 */
const englishOnly: Plugin = {
  name: "zod-english-only",
  setup(build) {
    build.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer) ? { path: "zod-locales", namespace: "english-only" } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "english-only" }, () => ({
      contents: 'export { default as en } from "zod/v4/locales/en.js";',
      resolveDir: root,
      loader: "js",
    }));
  },
};

/**
 * better-sqlite3's own JavaScript (ten small files) cost a command several milliseconds to resolve and compile, and
 * its `bindings` helper searches a dozen places for the native file. The bundle carries that JavaScript, so its
 * compiled code is cached with the rest, and hands it the native file's path directly. Only when the installed
 * better-sqlite3 is the version that was bundled and its native file sits where its install puts it: otherwise
 * (another version, a custom build) the installed package is loaded as it is.
 */
const sqliteDriver: Plugin = {
  name: "better-sqlite3-bundled",
  setup(build) {
    const version = (
      JSON.parse(readFileSync(join(root, "node_modules/better-sqlite3/package.json"), "utf8")) as {
        version: string;
      }
    ).version;
    build.onResolve({ filter: /^better-sqlite3$/ }, (args) =>
      args.importer.startsWith(join(root, "src"))
        ? { path: "driver", namespace: "sqlite-driver" }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "sqlite-driver" }, () => ({
      contents: `
        import Bundled from "better-sqlite3/lib/index.js";
        const { existsSync, readFileSync } = require("node:fs");
        const { dirname, join } = require("node:path");
        const load = require("node:module").createRequire(__filename);
        function chosen() {
          try {
            const dir = dirname(load.resolve("better-sqlite3/package.json"));
            const binding = join(dir, "build", "Release", "better_sqlite3.node");
            const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
            if (version === ${JSON.stringify(version)} && existsSync(binding)) {
              return function Database(file, options) {
                return new Bundled(file, { nativeBinding: binding, ...options });
              };
            }
          } catch {}
          return load("better-sqlite3");
        }
        let driver;
        export default function Database(file, options) {
          driver ??= chosen();
          return new driver(file, options);
        }
      `,
      resolveDir: root,
      loader: "js",
    }));
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints: ["src/cli/entry.ts"],
  outfile,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external,
  // Readable stack traces beat the last few kilobytes: whitespace and syntax are minified, names are kept.
  minifyWhitespace: true,
  minifySyntax: true,
  // The sources use import.meta.url to find files next to themselves; in the bundle that is the bundle.
  define: { "import.meta.url": "__bundleUrl" },
  banner: { js: 'const __bundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  legalComments: "none",
  metafile: true,
  plugins: [englishOnly, sqliteDriver],
  logLevel: "warning",
});

// Non-ASCII anywhere would make V8 hold the whole source as two-byte text (decoded and scanned at twice the
// size on every start); the executable reads it as latin1, which is only right for ASCII.
const nonAscii = /[^\x00-\x7f]/.exec(readFileSync(outfile, "latin1"));
if (nonAscii !== null) {
  const code = readFileSync(outfile, "utf8");
  const at = code.search(/[^\x00-\x7f]/);
  throw new Error(
    `the CLI bundle is not ASCII at character ${at}: ${JSON.stringify(code.slice(Math.max(0, at - 40), at + 10))} ` +
      "(write the character as a \\u escape in the source)",
  );
}

// A dynamic import() of a package left outside would need a module loader the compile cache does not give.
const code = readFileSync(outfile, "utf8");
const dynamic = code.match(/\bimport\(\s*["'`][^"'`]+["'`]\s*\)/g) ?? [];
if (dynamic.length > 0) throw new Error(`the CLI bundle still has dynamic imports: ${dynamic.join(", ")}`);

// Licences of what was bundled in.
const packages = new Set<string>();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (match?.[1] !== undefined) packages.add(match[1]);
}
const sections = [...packages].sort().map((name) => {
  const dir = join(root, "node_modules", name);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    version: string;
    license?: string;
  };
  const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  const text =
    file === undefined ? "(no licence file in the package)" : readFileSync(join(dir, file), "utf8").trim();
  return `${name}@${pkg.version} (${pkg.license ?? "unknown licence"})\n\n${text}`;
});
writeFileSync(
  join(dist, "cli/THIRD-PARTY-LICENSES.txt"),
  `context-ledger.cjs bundles these packages:\n\n${sections.join(`\n\n${"-".repeat(72)}\n\n`)}\n`,
);
if (!existsSync(outfile)) throw new Error("esbuild wrote no bundle");
console.log(`bundled the CLI: ${(code.length / 1024).toFixed(0)} KB, ${packages.size} packages inside`);
