import { describe, expect, it } from "vitest";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan, nextPlan } from "../plan/compaction-plan.js";
import { suggestCacheBreakpoints } from "./cache-breakpoints.js";
import { toProviderRequest, validateProviderRequest } from "./provider-rules.js";
import { renderPrompt } from "./render-prompt.js";

const log = ThreadLog.from("t", [
  { id: "s", role: "system", parts: [{ type: "text", text: "rules" }] },
  { id: "u1", role: "user", parts: [{ type: "text", text: "old question" }] },
  { id: "a1", role: "assistant", parts: [{ type: "text", text: "old answer" }] },
  { id: "u2", role: "user", parts: [{ type: "text", text: "new question" }] },
]);
const summarized = nextPlan(
  emptyPlan("t"),
  [
    {
      kind: "summarize",
      span: ["u1", "a1"],
      record: { kind: "summarize", summary: "asked and answered", summarizerId: "x", promptVersion: "1" },
      strategy: "test",
      reason: "older turn",
    },
  ],
  4,
);

describe("suggestCacheBreakpoints", () => {
  it("marks the end of the stable prefix and the last history message before per-turn content", () => {
    const prompt = renderPrompt(log, summarized, {
      counter: simpleCounter(),
      injections: [{ text: "today is Monday" }],
    });
    // system, summary, u2, injection
    expect(prompt.messages.map((m) => m.provenance.kind)).toEqual([
      "original",
      "summary",
      "original",
      "injection",
    ]);
    expect(suggestCacheBreakpoints(prompt)).toEqual([1, 2]);
    const body = toProviderRequest("anthropic", prompt, {
      cacheBreakpoints: suggestCacheBreakpoints(prompt),
    });
    expect(validateProviderRequest("anthropic", body)).toEqual([]);
    expect(JSON.stringify(body)).toContain('"cache_control":{"type":"ephemeral"}');
  });

  it("gives one point when the prefix is all there is, none for an empty prompt", () => {
    const onlySystem = renderPrompt(
      ThreadLog.from("t", [{ role: "system", parts: [{ type: "text", text: "rules" }] }]),
      emptyPlan("t"),
      {
        counter: simpleCounter(),
      },
    );
    expect(suggestCacheBreakpoints(onlySystem)).toEqual([0]);
    const empty = renderPrompt(ThreadLog.empty("t"), emptyPlan("t"), { counter: simpleCounter() });
    expect(suggestCacheBreakpoints(empty)).toEqual([]);
  });
});
