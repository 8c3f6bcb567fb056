/**
 * The harness step never gets stuck (DESIGN.md, issue 14): on random threads appended in random batches, with a
 * random budget before every call, a summarizer that answers (or fails) after a random delay, summaries in the background or
 * inline and the harness awaiting `idle()` or not, every `prepareTurn` whose protected core fits returns a request
 * within the budget, valid for the provider, that carries the core's messages verbatim. The core's floor is computed independently of the fallback: system
 * prompt, pinned messages, pending calls, the task, the newest user message and the newest group, every other
 * group dropped and every other tool body stubbed. Only below that floor may a turn fail, and then only with
 * `BudgetInfeasibleError`. Set FC_SEED to replay a failure.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { floorTokens } from "../benchmarks/support/simulate-turns.js";
import { createContextEngine } from "../src/context-engine.js";
import { BudgetInfeasibleError, RenderValidationError, SummarizerError } from "../src/errors/ledger-error.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { validateProviderRequest } from "../src/render/provider-rules.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Summarizer } from "../src/strategies/summarizer.js";
import { createExtractiveSummarizer } from "../src/strategies/summarizers/extractive-summarizer.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { FORMATS } from "./support/engine-turns.js";
import { simpleCounter } from "./support/simple-counter.js";

const RUNS = 300;
const counter = simpleCounter();

/**
 * The extractive summarizer behind a delay, as a model summarizer (not local: summaries go to the background);
 * with `failing`, a model that is down: every call fails after the delay.
 */
function slowSummarizer(delayMs: number, failing: boolean): Summarizer {
  const inner = createExtractiveSummarizer();
  return {
    id: "slow-extractive",
    promptVersion: inner.promptVersion,
    summarize: async (request) => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (failing) throw new SummarizerError("slow-extractive", "server_error", "the model is down");
      return inner.summarize(request);
    },
  };
}

/** Seqs of the core messages a request must carry verbatim: pinned (system too), the task, the newest user message. */
function coreSeqs(log: ThreadLog): number[] {
  const seqs = [...log.pinnedSeqs, log.firstUserSeq, log.lastUserSeq].filter((seq) => seq >= 0);
  // A message with no parts renders nothing to compare.
  return [...new Set(seqs)].filter((seq) => log.at(seq)!.parts.length > 0);
}

interface Setup {
  readonly summarization: "inline" | "background";
  readonly awaitIdle: boolean;
  readonly delayMs: number;
  readonly failing: boolean;
}

async function checkThread(
  batches: ReadonlyArray<ReadonlyArray<MessageInput>>,
  shares: ReadonlyArray<number>,
  setup: Setup,
): Promise<void> {
  const stores = createMemoryStores();
  const engine = createContextEngine({
    stores,
    counter,
    budget: { contextWindow: 1_000_000, reserveOutput: 0, safetyMargin: 0 },
    summarizer: slowSummarizer(setup.delayMs, setup.failing),
    summarization: setup.summarization,
  });
  let log = ThreadLog.empty("t");
  let coreCut = false;
  try {
    for (const [i, batch] of batches.entries()) {
      await engine.append("t", batch);
      log = log.append(batch);
      const full = (await engine.render("t", { format: "openai", planVersion: 0 })).prompt.tokenCount;
      const budget = Math.max(1, Math.floor(full * shares[i % shares.length]!));
      const format = FORMATS[i % FORMATS.length]!;
      const floor = floorTokens(log, counter, "lastUserMessage", true);
      // Below the floor the fallback may cut a core message to an excerpt.
      if (floor > budget) coreCut = true;
      try {
        const prepared = await engine.prepareTurn("t", { format, budget });
        expect(prepared.prompt.tokenCount).toBeLessThanOrEqual(budget);
        expect(validateProviderRequest(format, prepared.request as never)).toEqual([]);
        // The protected core is sent verbatim whenever it fits: pinned messages (system prompts included), the
        // task and the newest user message are never compacted, and cut to an excerpt only when it does not fit.
        // (A core message cut on an earlier, smaller budget stays cut: plans only grow. Not asserted then.)
        if (floor <= budget && !coreCut) {
          const verbatim = new Set(
            prepared.prompt.messages
              .filter((m) => m.provenance.kind === "original")
              .flatMap((m) => m.provenance.sourceIds),
          );
          for (const seq of coreSeqs(log)) expect(verbatim.has(log.idAt(seq)!)).toBe(true);
        }
      } catch (error) {
        if (error instanceof RenderValidationError) {
          // Only a thread no provider request can be made of (nothing but a system prompt, say).
          const raw = await engine.render("t", { format, planVersion: 0 });
          expect(validateProviderRequest(format, raw.request as never)).not.toEqual([]);
        } else {
          if (!(error instanceof BudgetInfeasibleError)) throw error;
          // Stuck is allowed only where even the protected core, stubbed, is over the budget.
          expect(floor).toBeGreaterThan(budget);
        }
      }
      if (setup.awaitIdle) await engine.idle();
    }
  } finally {
    await engine.idle();
    await stores.close();
  }
}

describe("never stuck (property)", () => {
  it("every turn whose protected core fits gets a valid request within budget, summaries background or inline, idle() awaited or not", async () => {
    await fc.assert(
      fc.asyncProperty(
        arbitraryBatches({ maxOps: 24 }),
        fc.array(fc.double({ min: 0.05, max: 1.1, noNaN: true }), { minLength: 1, maxLength: 6 }),
        fc.record({
          summarization: fc.constantFrom<"inline" | "background">("inline", "background"),
          awaitIdle: fc.boolean(),
          delayMs: fc.integer({ min: 0, max: 3 }),
          failing: fc.boolean(),
        }),
        (batches, shares, setup) => checkThread(batches, shares, setup),
      ),
      fcParams(RUNS),
    );
  }, 240_000);
});
