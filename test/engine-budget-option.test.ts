/**
 * The engine's budget takes the same forms as `prepareTurn`'s (a number of tokens, budget options, a
 * `TokenBudget`), and an engine without any budget is a compile-time error. The `@ts-expect-error` lines are
 * checked by `npm run typecheck` (tsconfig.json includes test/): if the missing budget ever type-checks again, the
 * directive itself becomes the error.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type BudgetInput,
  type ContextEngineOptions,
  createContextEngine,
  createMemoryStores,
  createTokenBudget,
  type PrepareTurnOptions,
  ValidationError,
} from "../src/index.js";

const user = (text: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text }] });

describe("the engine's budget option", () => {
  it("accepts exactly the forms prepareTurn's budget accepts", () => {
    type EngineBudgetOption = Extract<ContextEngineOptions, { budget: unknown }>["budget"];
    expectTypeOf<EngineBudgetOption>().toEqualTypeOf<BudgetInput>();
    expectTypeOf<NonNullable<PrepareTurnOptions["budget"]>>().toEqualTypeOf<BudgetInput>();
  });

  it("is required: without a budget or a config that names one, the call does not type-check", () => {
    const stores = createMemoryStores();
    // @ts-expect-error no budget, and no pipeline config naming one
    expect(() => createContextEngine({ stores })).toThrow(/needs a budget/);
    // @ts-expect-error a pipeline config without a budget does not supply one
    expect(() => createContextEngine({ stores, pipeline: { strategies: [] } })).toThrow(ValidationError);
    // A config that names a budget is enough.
    expect(() =>
      createContextEngine({ stores, pipeline: { budget: { model: "gpt-4o" }, strategies: [] } }),
    ).not.toThrow();
  });

  it("as a number, means what prepareTurn's number means: the request has at most that many tokens", async () => {
    const stores = createMemoryStores();
    const byNumber = createContextEngine({ stores, budget: 2_000 });
    const explicit = createContextEngine({ stores, budget: { contextWindow: 10_000 } });
    await byNumber.append("t", [user("hello "), user("world ".repeat(3_000))]);
    const fromEngine = await byNumber.prepareTurn("t", { format: "openai" });
    const fromTurn = await explicit.prepareTurn("t", { format: "openai", budget: 2_000 });
    expect(fromEngine.stats.budget).toEqual(fromTurn.stats.budget);
    expect(fromEngine.stats.budget.contextWindow).toBe(2_000);
    expect(fromEngine.stats.tokens).toBeLessThanOrEqual(2_000);
    expect(fromEngine.request).toEqual(fromTurn.request);
  });

  it("takes budget options and a ready TokenBudget alike", async () => {
    const stores = createMemoryStores();
    const options = { model: "gpt-4o", reserveOutput: 1_000 } as const;
    const a = createContextEngine({ stores, budget: options });
    const b = createContextEngine({ stores, budget: createTokenBudget(options) });
    await a.append("t", [user("hi")]);
    const [ta, tb] = [
      await a.prepareTurn("t", { format: "openai" }),
      await b.prepareTurn("t", { format: "openai" }),
    ];
    expect(ta.stats.budget).toEqual(tb.stats.budget);
    expect(ta.stats.budget.contextWindow).toBe(128_000);
  });

  it("refuses a number that is not a positive whole number of tokens, naming the field", () => {
    const stores = createMemoryStores();
    expect(() => createContextEngine({ stores, budget: 0 })).toThrow(/contextWindow/);
    expect(() => createContextEngine({ stores, budget: 1.5 })).toThrow(ValidationError);
  });
});
