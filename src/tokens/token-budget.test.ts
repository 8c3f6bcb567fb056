import { describe, expect, expectTypeOf, it } from "vitest";
import type * as z from "zod";
import { validationError } from "../../test/support/builders.js";
import {
  availableForPrompt,
  compactionTarget,
  createTokenBudget,
  type TokenBudgetOptions,
  type tokenBudgetOptionsSchema,
  toolResultCap,
} from "./token-budget.js";

const fieldOf = (fn: () => unknown): string | undefined => validationError(fn).where.field;

describe("createTokenBudget", () => {
  it("fills window and output reserve from the model table", () => {
    const budget = createTokenBudget({ model: "gpt-4o", injectionReserve: 2_000 });
    expect(budget).toMatchObject({ model: "gpt-4o", contextWindow: 128_000, reserveOutput: 16_384 });
    expect(budget.safetyMargin).toBe(1_280);
    expect(availableForPrompt(budget)).toBe(128_000 - 16_384 - 1_280);
    expect(compactionTarget(budget)).toBe(108_336);
    expect(Object.isFrozen(budget)).toBe(true);
    expect(Object.isFrozen(budget.tierCaps)).toBe(true);
  });

  it("subtracts every reserve", () => {
    const budget = createTokenBudget({
      contextWindow: 10_000,
      reserveOutput: 1_000,
      toolSchemaTokens: 500,
      formattingOverhead: 100,
      safetyMargin: 400,
      injectionReserve: 300,
      rehydrationReserve: 700,
    });
    expect(availableForPrompt(budget)).toBe(8_000);
    expect(compactionTarget(budget)).toBe(7_000);
    expect(budget.model).toBeUndefined();
    expect("model" in budget).toBe(false);
  });

  it("lets contextWindow override a known model's window", () => {
    expect(createTokenBudget({ model: "claude-sonnet-4-5", contextWindow: 1_000_000 }).contextWindow).toBe(
      1_000_000,
    );
  });

  it("caps tool results at a fraction of the window", () => {
    expect(toolResultCap(createTokenBudget({ model: "gpt-4o", tierCaps: { toolResults: 0.3 } }))).toBe(
      38_400,
    );
    expect(toolResultCap(createTokenBudget({ model: "gpt-4o" }))).toBeUndefined();
  });

  it("never reserves more than half a small window for output by default", () => {
    expect(createTokenBudget({ contextWindow: 2_000 }).reserveOutput).toBe(1_000);
    expect(createTokenBudget({ model: "gpt-4" }).reserveOutput).toBe(2_048);
  });

  it("rejects bad values with a ValidationError naming the field", () => {
    expect(fieldOf(() => createTokenBudget({ model: "gpt-4o", reserveOutput: -1 }))).toBe("reserveOutput");
    expect(fieldOf(() => createTokenBudget({ model: "gpt-4o", safetyMargin: 1.5 }))).toBe("safetyMargin");
    expect(fieldOf(() => createTokenBudget({ contextWindow: 0 }))).toBe("contextWindow");
    expect(fieldOf(() => createTokenBudget({ model: "gpt-4o", tierCaps: { toolResults: 1.5 } }))).toBe(
      "tierCaps.toolResults",
    );
    expect(
      fieldOf(() => createTokenBudget({ model: "gpt-4o", reserveOuptut: 5 } as TokenBudgetOptions)),
    ).toBe("reserveOuptut");
  });

  it("rejects reserves that leave no room for the prompt, naming the reserve that overflowed", () => {
    expect(fieldOf(() => createTokenBudget({ contextWindow: 8_000, reserveOutput: 8_000 }))).toBe(
      "reserveOutput",
    );
    expect(
      fieldOf(() =>
        createTokenBudget({ contextWindow: 8_000, reserveOutput: 4_000, injectionReserve: 4_000 }),
      ),
    ).toBe("injectionReserve");
    expect(() =>
      createTokenBudget({ contextWindow: 8_000, reserveOutput: 4_000, toolSchemaTokens: 5_000 }),
    ).toThrow(/reserveOutput 4000 \+ toolSchemaTokens 5000 = 9000 >= contextWindow 8000/);
  });

  it("asks for a contextWindow when the model is unknown or missing", () => {
    expect(fieldOf(() => createTokenBudget({ model: "llama-3-70b" }))).toBe("model");
    expect(() => createTokenBudget({ model: "llama-3-70b" })).toThrow(/pass contextWindow/);
    expect(fieldOf(() => createTokenBudget({}))).toBe("contextWindow");
    expect(createTokenBudget({ model: "llama-3-70b", contextWindow: 8_192 }).contextWindow).toBe(8_192);
  });

  it("keeps the zod schema and the hand-written options type in step", () => {
    expectTypeOf<z.output<typeof tokenBudgetOptionsSchema>>().toEqualTypeOf<TokenBudgetOptions>();
  });
});
