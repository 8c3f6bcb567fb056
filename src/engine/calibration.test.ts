import { describe, expect, it } from "vitest";
import type { ModelCallRecord } from "../stores/model-call-store.js";
import { availableForPrompt, createTokenBudget } from "../tokens/token-budget.js";
import { calibratedBudget, calibrationFrom, DEFAULT_CALIBRATION } from "./calibration.js";

function call(estimate: number, input?: number): ModelCallRecord {
  return {
    callId: `c${Math.random()}`,
    threadId: "t",
    logSeq: 1,
    planVersion: 0,
    format: "openai",
    model: "m",
    requestHash: "h",
    tokenEstimate: estimate,
    summaries: [],
    evictions: [],
    createdAt: new Date(0).toISOString(),
    ...(input === undefined ? {} : { usage: { inputTokens: input } }),
  };
}

describe("calibrationFrom", () => {
  it("stays at 1 until enough calls report usage", () => {
    expect(calibrationFrom("m", [call(100, 150), call(100, 150)])).toEqual({
      model: "m",
      ratio: 1,
      samples: 2,
    });
  });

  it("takes the median ratio, so one odd report does not move it", () => {
    const records = [call(100, 120), call(200, 240), call(100, 500), call(50, 60), call(100)];
    const c = calibrationFrom("m", records);
    expect(c.samples).toBe(4);
    expect(c.ratio).toBeCloseTo(1.2, 10);
  });

  it("clamps the ratio to [1/maxRatio, maxRatio]", () => {
    const high = [call(100, 900), call(100, 800), call(100, 1000)];
    expect(calibrationFrom("m", high).ratio).toBe(DEFAULT_CALIBRATION.maxRatio);
    const low = [call(900, 100), call(800, 100), call(1000, 100)];
    expect(calibrationFrom("m", low).ratio).toBe(1 / DEFAULT_CALIBRATION.maxRatio);
  });
});

describe("calibratedBudget", () => {
  const budget = createTokenBudget({ contextWindow: 10_000, reserveOutput: 1_000, safetyMargin: 0 });

  it("returns the same budget when the estimate does not run low", () => {
    expect(calibratedBudget(budget, 1)).toBe(budget);
    expect(calibratedBudget(budget, 0.8)).toBe(budget);
  });

  it("shrinks the prompt room by the ratio", () => {
    const shrunk = calibratedBudget(budget, 1.5);
    expect(availableForPrompt(shrunk)).toBe(Math.floor(9_000 / 1.5));
    expect(shrunk.contextWindow).toBe(budget.contextWindow);
    expect(Object.isFrozen(shrunk)).toBe(true);
  });
});
