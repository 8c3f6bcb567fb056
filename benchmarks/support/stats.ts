/** Median and range of a list of timings (ms). */
export interface Timing {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: number;
}

/** Summarizes timings. */
export function summarize(samples: ReadonlyArray<number>): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, runs: sorted.length };
}

let sink = 0;
/** Keeps results alive so the JIT cannot optimise the measured work away. */
export function consume(value: unknown): void {
  if (typeof value === "string") sink += value.length;
  else if (typeof value === "number") sink += value;
  else if (value !== null && typeof value === "object") sink += 1;
}
/** The accumulated sink (print it once so it is observably used). */
export function sinkValue(): number {
  return sink;
}

/** Times `fn` once (ms). */
export function time(fn: () => unknown): number {
  const start = performance.now();
  consume(fn());
  return performance.now() - start;
}

/** A measurement in wall-clock and in CPU time (user + system of the whole process, GC threads included), ms. */
export interface Sample {
  readonly wall: number;
  readonly cpu: number;
}

/**
 * Times `fn` once on both clocks. CPU time leaves out time the VM was not running us (steal, other tenants),
 * which on a shared 2-vCPU machine is most of the run-to-run drift of wall-clock medians.
 */
export function timeBoth(fn: () => unknown): Sample {
  const cpu = process.cpuUsage();
  const start = performance.now();
  consume(fn());
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000 };
}

/** Formats a number of ms. */
export function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}
