import type { ModelCallRecord, ModelCallStore } from "../stores/model-call-store.js";
import { availableForPrompt, type TokenBudget } from "../tokens/token-budget.js";

/** How the engine learns the ratio of provider input tokens to its own estimate. */
export interface CalibrationSettings {
  /** Newest calls with usage considered per model (default 50). */
  readonly window: number;
  /** Below this many samples the ratio stays 1 (default 3). */
  readonly minSamples: number;
  /** The ratio is clamped to [1 / maxRatio, maxRatio] (default 2), so one bad report cannot wreck the budget. */
  readonly maxRatio: number;
  /** How long a worker reuses a ratio loaded from the store before asking again (default 60,000 ms). */
  readonly ttlMs: number;
}

/** The calibration of one model: provider tokens per estimated token, and how many calls it rests on. */
export interface Calibration {
  readonly model: string;
  readonly ratio: number;
  readonly samples: number;
}

/** Default calibration settings. */
export const DEFAULT_CALIBRATION: CalibrationSettings = Object.freeze({
  window: 50,
  minSamples: 3,
  maxRatio: 2,
  ttlMs: 60_000,
});

function median(values: number[]): number {
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 === 1 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
}

/**
 * The median ratio of reported input tokens to the engine's estimate over the given calls. A median rather than
 * a mean: one call with an unusual tool schema or a cached prefix should not move the budget.
 */
export function calibrationFrom(
  model: string,
  records: ReadonlyArray<ModelCallRecord>,
  settings: CalibrationSettings = DEFAULT_CALIBRATION,
): Calibration {
  const ratios: number[] = [];
  for (const r of records) {
    if (r.usage === undefined || r.tokenEstimate <= 0 || r.usage.inputTokens <= 0) continue;
    ratios.push(r.usage.inputTokens / r.tokenEstimate);
  }
  if (ratios.length < settings.minSamples) return { model, ratio: 1, samples: ratios.length };
  const ratio = Math.min(settings.maxRatio, Math.max(1 / settings.maxRatio, median(ratios)));
  return { model, ratio, samples: ratios.length };
}

/**
 * The budget the engine compacts to when the provider counts `ratio` times what the engine estimates: the
 * prompt room shrinks by the ratio (as extra safety margin). Estimates that run high leave the budget as it is
 * (the same reference), since over-counting only compacts a little early.
 */
export function calibratedBudget(budget: TokenBudget, ratio: number): TokenBudget {
  if (!(ratio > 1)) return budget;
  const available = availableForPrompt(budget);
  const shrunk = Math.max(1, Math.floor(available / ratio));
  return Object.freeze({ ...budget, safetyMargin: budget.safetyMargin + (available - shrunk) });
}

/** Per-model calibrations of one engine, loaded from the call store and refreshed after a TTL or new usage. */
export class CalibrationCache {
  readonly #entries = new Map<string, { calibration: Calibration; loadedAt: number }>();

  constructor(
    private readonly calls: ModelCallStore,
    private readonly settings: CalibrationSettings,
    private readonly now: () => number,
  ) {}

  /** The calibration of a model (ratio 1 when no model is named). */
  async get(model: string | undefined): Promise<Calibration> {
    if (model === undefined) return { model: "", ratio: 1, samples: 0 };
    const hit = this.#entries.get(model);
    if (hit !== undefined && this.now() - hit.loadedAt < this.settings.ttlMs) return hit.calibration;
    return this.refresh(model);
  }

  /** Reloads a model's calibration from the store. */
  async refresh(model: string): Promise<Calibration> {
    const records = await this.calls.listWithUsage(model, this.settings.window);
    const calibration = calibrationFrom(model, records, this.settings);
    this.#entries.set(model, { calibration, loadedAt: this.now() });
    return calibration;
  }
}
