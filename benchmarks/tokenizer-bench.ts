/**
 * Token counting: our exact BPE (`src/tokens/bpe-tokenizer.ts`) against js-tiktoken and gpt-tokenizer, in one
 * process, on ~5 MB of real agent text (every content / arguments / reasoning string of the shared
 * trajectories, repeated; a seeded generator when the folder is absent), each string counted on its own as
 * the message counter does. Reports load time, throughput (median and min–max of several runs after a
 * warm-up, MB/s, ratio to js-tiktoken), the worst cases (one huge pre-tokenizer piece) with runs that would
 * take more than a few seconds skipped, and any count that differs between libraries.
 *
 * `npx tsx benchmarks/tokenizer-bench.ts [--full] [--encoding cl100k_base]`
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { createBpeTokenizer } from "../src/tokens/bpe-tokenizer.js";
import { type EncodingName, isEncodingName, loadEncodingData } from "../src/tokens/encoding-data.js";
import { repoRoot } from "../test/support/repo-root.js";
import { listTrajectories } from "../test/support/trajectories.js";
import { consume, ms, sinkValue, summarize, type Timing } from "./support/stats.js";

const FULL = process.argv.includes("--full");
const encodingArg = process.argv[process.argv.indexOf("--encoding") + 1] ?? "o200k_base";
const ENCODING: EncodingName = isEncodingName(encodingArg) ? encodingArg : "o200k_base";
const TARGET_BYTES = 5_000_000;
const RUNS = FULL ? 11 : 5;
const CAP_MS = FULL ? 10_000 : 3_000;
const SIZES = [1_000, 10_000, 50_000, 100_000];

type Count = (text: string) => number;
let clearGptTokenizerCache = (): void => {};
interface Library {
  readonly name: string;
  readonly count: Count;
  readonly loadMs: number;
}

async function loadLibraries(): Promise<Library[]> {
  const timed = async (name: string, make: () => Promise<Count> | Count): Promise<Library> => {
    const start = performance.now();
    const count = await make();
    count("warm the vocabulary");
    return { name, count, loadMs: performance.now() - start };
  };
  const noSpecials = { disallowedSpecial: new Set<string>() };
  return [
    await timed("context-ledger bpe", () => createBpeTokenizer(ENCODING).count),
    await timed("js-tiktoken", () => {
      const encoder = new Tiktoken(loadEncodingData(ENCODING) as TiktokenBPE);
      return (text) => encoder.encode(text, [], []).length;
    }),
    await timed("gpt-tokenizer", async () => {
      const mod = await import(`gpt-tokenizer/encoding/${ENCODING}`);
      const countTokens = mod.countTokens as (text: string, options: object) => number;
      clearGptTokenizerCache = mod.clearMergeCache as () => void;
      return (text) => countTokens(text, noSpecials);
    }),
  ];
}

/** Every text of the trajectories, or a seeded imitation (prose, code, JSON, shell output) when absent. */
function baseTexts(): { source: string; texts: string[] } {
  const texts: string[] = [];
  for (const file of listTrajectories()) {
    for (const line of file.text.split("\n")) {
      if (line.trim() === "") continue;
      const row = JSON.parse(line) as { content?: unknown; reasoning?: unknown; tool_calls?: unknown[] };
      if (typeof row.content === "string") texts.push(row.content);
      if (typeof row.reasoning === "string") texts.push(row.reasoning);
      for (const call of row.tool_calls ?? []) {
        const args = (call as { arguments?: unknown }).arguments;
        if (typeof args === "string") texts.push(args);
      }
    }
  }
  if (texts.length > 0) return { source: "shared trajectories", texts };
  return { source: "seeded generator (trajectories folder absent)", texts: generatedTexts(2_000) };
}

function generatedTexts(n: number): string[] {
  let seed = 2024;
  const rnd = (k: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed % k;
  };
  const words = [
    "the",
    "function",
    "returns",
    "None",
    "error",
    "TypeError:",
    "self.assert",
    "résumé",
    "データ",
  ];
  const pick = (): string => words[rnd(words.length)]!;
  const shapes = [
    () =>
      `THOUGHT: I should check ${pick()} in src/${pick()}.py line ${rnd(900)}.\n\`\`\`bash\ngrep -rn "${pick()}" .\n\`\`\``,
    () => JSON.stringify({ command: `sed -n '${rnd(99)},${rnd(999)}p' ${pick()}.py`, id: rnd(1e6) }),
    () => `    def ${pick()}_${rnd(99)}(self, x):\n        return x * ${rnd(1000)}  # ${pick()} ${pick()}\n`,
    () => `${"=".repeat(rnd(80))}\n${rnd(100)} passed, ${rnd(5)} failed in ${rnd(100) / 10}s 🎉\r\n`,
  ];
  return Array.from({ length: n }, () =>
    Array.from({ length: 1 + rnd(30) }, () => shapes[rnd(4)]!()).join("\n"),
  );
}

function corpus(): { source: string; base: string[]; texts: string[]; bytes: number } {
  const { source, texts: base } = baseTexts();
  const texts: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < TARGET_BYTES; i++) {
    const text = base[i % base.length]!;
    texts.push(text);
    bytes += Buffer.byteLength(text);
  }
  return { source, base, texts, bytes };
}

function countAll(count: Count, texts: ReadonlyArray<string>): number {
  let total = 0;
  for (const t of texts) total += count(t);
  return total;
}

function measure(fn: () => number, runs: number): { timing: Timing; result: number } {
  let result = fn(); // warm-up
  const samples: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    result = fn();
    samples.push(performance.now() - start);
    consume(result);
  }
  return { timing: summarize(samples), result };
}

interface ThroughputRow {
  library: string;
  timing: Timing;
  mbPerS: number;
  vsJsTiktoken: number;
  tokens: number;
}

function throughput(libs: Library[], texts: string[], bytes: number): ThroughputRow[] {
  const rows = libs.map((lib) => ({ library: lib.name, ...measure(() => countAll(lib.count, texts), RUNS) }));
  // Fresh caches every run: what a first pass over new text costs (the corpus repeats, so warm caches help).
  const gpt = libs.find((l) => l.name === "gpt-tokenizer")!;
  rows.splice(1, 0, {
    library: "context-ledger bpe (cold piece cache)",
    ...measure(() => countAll(createBpeTokenizer(ENCODING).count, texts), RUNS),
  });
  rows.push({
    library: "gpt-tokenizer (cold merge cache)",
    ...measure(() => {
      clearGptTokenizerCache();
      return countAll(gpt.count, texts);
    }, RUNS),
  });
  const tiktoken = rows.find((r) => r.library === "js-tiktoken")!.timing.median;
  return rows.map(({ library, timing, result }) => ({
    library,
    timing,
    mbPerS: bytes / 1e6 / (timing.median / 1000),
    vsJsTiktoken: tiktoken / timing.median,
    tokens: result,
  }));
}

/** Texts in the same order and counted separately in every library: report each disagreement. */
function mismatches(libs: Library[], texts: ReadonlyArray<string>): string[] {
  const out: string[] = [];
  texts.forEach((text, i) => {
    const counts = libs.map((lib) => lib.count(text));
    if (counts.some((c) => c !== counts[0])) {
      out.push(
        `text #${i} (${text.length} chars): ${libs.map((l, j) => `${l.name}=${counts[j]}`).join(", ")}`,
      );
    }
  });
  return out;
}

const SHAPES: Record<string, (n: number) => string> = {
  "`=` run": (n) => "=".repeat(n),
  "one letter (`a`)": (n) => "a".repeat(n),
  base64: (n) =>
    Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919 + (i >> 3)) & 0xff))
      .toString("base64")
      .slice(0, n),
  "minified JSON": (n) => {
    let s = "";
    for (let i = 0; s.length < n; i++)
      s += JSON.stringify({ id: i, name: `item${i % 97}`, tags: ["a", "b"], ok: i % 2 === 0 });
    return s.slice(0, n);
  },
};

interface WorstRow {
  shape: string;
  chars: number;
  library: string;
  timing?: Timing;
  tokens?: number;
  skipped?: string;
}

/** Runs each shape up the size ladder; a run predicted (from the last two sizes' growth) to pass the cap is skipped. */
function worstCases(libs: Library[]): WorstRow[] {
  const rows: WorstRow[] = [];
  for (const [shape, make] of Object.entries(SHAPES)) {
    for (const lib of libs) {
      const seen: Array<{ chars: number; ms: number }> = [];
      for (const chars of SIZES) {
        const predicted = predict(seen, chars);
        if (predicted > CAP_MS) {
          const skipped = `> ${CAP_MS / 1000} s (est. ${(predicted / 1000).toFixed(1)} s), skipped`;
          rows.push({ shape, chars, library: lib.name, skipped });
          continue;
        }
        // Every run gets a different string (one char shorter each time) so no library's cache can answer it.
        const first = performance.now();
        const tokens = lib.count(make(chars));
        const firstMs = performance.now() - first;
        const samples = [firstMs];
        for (let run = 1; run < 5 && firstMs < 500; run++) {
          const text = make(chars - run);
          const start = performance.now();
          consume(lib.count(text));
          samples.push(performance.now() - start);
        }
        const timing = summarize(samples);
        seen.push({ chars, ms: timing.median });
        rows.push({ shape, chars, library: lib.name, timing, tokens });
      }
    }
  }
  return rows;
}

function predict(seen: ReadonlyArray<{ chars: number; ms: number }>, chars: number): number {
  const last = seen[seen.length - 1];
  if (last === undefined) return 0;
  const before = seen[seen.length - 2];
  const exponent =
    before === undefined || before.ms <= 0.5
      ? 2
      : Math.min(2, Math.max(1, Math.log(last.ms / before.ms) / Math.log(last.chars / before.chars)));
  return last.ms * (chars / last.chars) ** exponent;
}

function markdown(rows: ThroughputRow[], worst: WorstRow[], libs: Library[]): string {
  const lines = [
    `| library (${ENCODING}) | load (ms) | median (ms) | min–max (ms) | MB/s | × js-tiktoken |`,
    "|---|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const load = libs.find((l) => l.name === r.library)?.loadMs;
    lines.push(
      `| ${r.library} | ${load === undefined ? "–" : ms(load)} | ${ms(r.timing.median)} | ${ms(r.timing.min)}–${ms(r.timing.max)} | ${r.mbPerS.toFixed(1)} | ${r.vsJsTiktoken.toFixed(1)} |`,
    );
  }
  lines.push(
    "",
    `| worst case | chars | ${libs.map((l) => l.name).join(" | ")} |`,
    `|---|---:|${libs.map(() => "---:").join("|")}|`,
  );
  for (const [shape] of Object.entries(SHAPES)) {
    for (const chars of SIZES) {
      const cells = libs.map((lib) => {
        const row = worst.find((w) => w.shape === shape && w.chars === chars && w.library === lib.name)!;
        return row.timing === undefined ? (row.skipped ?? "") : `${ms(row.timing.median)} ms`;
      });
      lines.push(`| ${shape} | ${chars.toLocaleString("en-US")} | ${cells.join(" | ")} |`);
    }
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { source, base, texts, bytes } = corpus();
  console.log(
    `corpus: ${source}, ${texts.length} texts, ${(bytes / 1e6).toFixed(2)} MB; ${RUNS} runs; cap ${CAP_MS} ms`,
  );
  const libs = await loadLibraries();
  const wrong = mismatches(libs, base);
  console.log(
    wrong.length === 0 ? `counts identical across libraries on all ${base.length} texts` : wrong.join("\n"),
  );
  const rows = throughput(libs, texts, bytes);
  const worst = worstCases(libs);
  for (const w of worst) {
    const peers = worst.filter((x) => x.shape === w.shape && x.chars === w.chars && x.tokens !== undefined);
    if (peers.some((p) => p.tokens !== peers[0]!.tokens))
      wrong.push(`worst case ${w.shape} × ${w.chars}: counts differ`);
  }
  const table = markdown(rows, worst, libs);
  console.log(`\n${table}\n`);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${cpus()[0]?.model ?? "unknown"} × ${cpus().length}`,
    mode: FULL ? "full" : "quick",
    encoding: ENCODING,
    corpus: { source, texts: texts.length, bytes, distinctTexts: base.length },
    load: Object.fromEntries(libs.map((l) => [l.name, l.loadMs])),
    throughput: rows,
    worstCases: worst,
    capMs: CAP_MS,
    mismatches: [...new Set(wrong)],
  };
  const dir = join(repoRoot, "benchmarks/results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "tokenizer.json"), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`wrote benchmarks/results/tokenizer.json (sink ${sinkValue()})`);
}

await main();
