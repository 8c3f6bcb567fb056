/**
 * Bundles the CLI into one CommonJS file, `dist/cli/context-ledger.cjs` (run by `dist/cli/bin.js`), so a command
 * loads one file whose compiled code the CLI can cache, instead of resolving and compiling some two hundred
 * modules on every start. Native and optional packages stay outside (loaded from node_modules as usual); the
 * licences of the packages bundled in are written beside it.
 *
 * Run by `npm run build`, after `tsc` has emitted the rest of `dist/`; `--outdir DIR` bundles into another
 * build folder (the package test builds into a temporary one).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const root = join(import.meta.dirname, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  peerDependencies?: Record<string, string>;
};
const external = ["better-sqlite3", "playwright-core", ...Object.keys(manifest.peerDependencies ?? {})];
const { values } = parseArgs({ options: { outdir: { type: "string" } } });
const dist = resolve(values.outdir ?? join(root, "dist"));
const outfile = join(dist, "cli/context-ledger.cjs");

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
  logLevel: "warning",
});

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
