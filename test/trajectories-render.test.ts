import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BudgetInfeasibleError } from "../src/errors/ledger-error.js";
import { importTranscript } from "../src/log/import-jsonl.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import { toOpenAIChat } from "../src/render/openai-chat-adapter.js";
import {
  type ProviderFormat,
  toProviderRequest,
  validateProviderRequest,
} from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { dropOldestToFit } from "../src/strategies/drop-oldest-to-fit.js";
import { pendingResultText } from "../src/texts/placeholders.js";
import { createTokenizer } from "../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../src/tokens/message-counter.js";
import { arbitraryPlanFor, fcParams } from "./support/arbitrary-log.js";
import { listTrajectories, trajectoriesAvailable, trajectoriesSkipReason } from "./support/trajectories.js";

interface SourceLine {
  readonly role: "system" | "user" | "assistant" | "tool";
  readonly content: string;
  readonly tool_calls?: ReadonlyArray<{ id: string; name: string; arguments: string }>;
  readonly tool_call_id?: string;
}

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];
const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");

/** What the OpenAI Chat API should receive for one source line: the same message, as the API spells it. */
function expectedChat(line: SourceLine): object {
  if (line.role === "tool") return { role: "tool", tool_call_id: line.tool_call_id, content: line.content };
  if (line.role === "assistant" && line.tool_calls !== undefined && line.tool_calls.length > 0) {
    return {
      role: "assistant",
      content: line.content,
      tool_calls: line.tool_calls.map((c) => ({
        id: c.id,
        type: "function",
        function: { name: c.name, arguments: c.arguments },
      })),
    };
  }
  return { role: line.role, content: line.content };
}

function linesOf(text: string): SourceLine[] {
  return text
    .split(/\r\n|\n|\r/)
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as SourceLine);
}

if (!trajectoriesAvailable) console.warn(`trajectory render tests skipped: ${trajectoriesSkipReason}`);

describe.skipIf(!trajectoriesAvailable)(
  "every shared trajectory through import → plan → render → provider",
  () => {
    for (const file of listTrajectories()) {
      const log = importTranscript(ThreadLog.empty(file.name), file.text);
      const lines = linesOf(file.text);

      it(`${file.name}: with an empty plan the OpenAI Chat request reproduces the transcript message for message`, () => {
        const prompt = renderPrompt(log, emptyPlan(log.threadId), { counter });
        const expected: object[] = [];
        lines.forEach((line, seq) => {
          expected.push(expectedChat(line));
          // A call the run never answered gets a stub result right after it, so the request stays valid.
          for (const call of line.tool_calls ?? []) {
            if (log.pendingCalls.get(call.id)?.seq === seq) {
              expected.push({ role: "tool", tool_call_id: call.id, content: pendingResultText(call.name) });
            }
          }
        });
        const body = toOpenAIChat(prompt);
        expect(body.messages).toEqual(expected);
        expect(validateProviderRequest("openai", body)).toEqual([]);
      });

      it(`${file.name}: an empty plan renders valid requests in every format, stubbing or holding pending calls`, () => {
        for (const pendingCalls of ["stub", "hold"] as const) {
          const prompt = renderPrompt(log, emptyPlan(log.threadId), { counter, pendingCalls });
          for (const format of FORMATS) {
            expect(
              validateProviderRequest(format, toProviderRequest(format, prompt)),
              `${format}/${pendingCalls}`,
            ).toEqual([]);
          }
        }
      });

      it(`${file.name}: random valid plans render valid requests in every format`, () => {
        fc.assert(
          fc.property(
            arbitraryPlanFor(log),
            fc.constantFrom("stub" as const, "hold" as const),
            (plan, pendingCalls) => {
              const prompt = renderPrompt(log, plan, { counter, pendingCalls });
              const sum = prompt.messages.reduce((n, m) => n + m.tokens, counter.requestOverhead);
              expect(prompt.tokenCount).toBe(sum);
              for (const format of FORMATS) {
                const problems = validateProviderRequest(format, toProviderRequest(format, prompt));
                // A plan may remove everything (or all but the system prompt, which Anthropic sends apart); no
                // provider accepts an empty request, and that must then be the only problem.
                const nothingToSend =
                  prompt.messages.length === 0 ||
                  (format === "anthropic" && prompt.messages.every((m) => m.role === "system"));
                if (nothingToSend) expect(problems).toEqual([expect.stringMatching(/empty/)]);
                else expect(problems).toEqual([]);
              }
            },
          ),
          fcParams(40),
        );
      });

      it(`${file.name}: dropping the oldest groups fits 50 %, 25 % and 10 % of the full size where pinned content allows`, () => {
        const full = renderPrompt(log, emptyPlan(log.threadId), { counter }).tokenCount;
        for (const share of [0.5, 0.25, 0.1]) {
          const budget = Math.floor(full * share);
          let plan: ReturnType<typeof emptyPlan>;
          try {
            plan = dropOldestToFit(log, emptyPlan(log.threadId), { counter, budget });
          } catch (error) {
            // Only legitimate when the pinned content (system prompt, last user turn, pending calls) is too big:
            // the error must say so with numbers that really exceed the budget.
            expect(error).toBeInstanceOf(BudgetInfeasibleError);
            const { required, available } = error as BudgetInfeasibleError;
            expect(required).toBeGreaterThan(available);
            expect(available).toBe(budget - counter.requestOverhead);
            continue;
          }
          const prompt = renderPrompt(log, plan, { counter });
          expect(prompt.tokenCount).toBeLessThanOrEqual(budget);
          for (const format of FORMATS)
            expect(validateProviderRequest(format, toProviderRequest(format, prompt))).toEqual([]);
        }
      });
    }
  },
);

describe("the pipeline without the shared data", () => {
  it("keeps a generated transcript valid after import", () => {
    const inputs: MessageInput[] = [
      { role: "user", parts: [{ type: "text", text: "hi" }] },
      { role: "assistant", parts: [{ type: "tool_call", callId: "a", name: "f", args: "{}" }] },
    ];
    const log = ThreadLog.from("t", inputs);
    const body = toOpenAIChat(renderPrompt(log, emptyPlan("t"), { counter }));
    expect(validateProviderRequest("openai", body)).toEqual([]);
    expect(body.messages).toHaveLength(3);
  });
});
