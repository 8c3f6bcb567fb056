import type { MessageInput } from "../../src/log/message.js";

/** Rounds of user question, tool call, long tool result and answer: old results get cleared, then dropped. */
export function toolRounds(from: number, count: number): MessageInput[] {
  const out: MessageInput[] = [];
  for (let r = from; r < from + count; r++) {
    out.push(
      { id: `u${r}`, role: "user", parts: [{ type: "text", text: `question ${r} ${"q".repeat(40)}` }] },
      {
        id: `a${r}`,
        role: "assistant",
        parts: [{ type: "tool_call", callId: `c${r}`, name: "search", args: `{"q":"${r}"}` }],
      },
      {
        id: `t${r}`,
        role: "tool",
        parts: [{ type: "tool_result", callId: `c${r}`, content: `result ${r} ${"r".repeat(600)}` }],
      },
      { id: `x${r}`, role: "assistant", parts: [{ type: "text", text: `answer ${r} ${"a".repeat(80)}` }] },
    );
  }
  return out;
}
