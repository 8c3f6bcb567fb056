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

/** A system prompt, then `turns` rounds of question, tool call, a 2,000-character result and a closing answer. */
export function stepConversation(turns: number): MessageInput[] {
  const out: MessageInput[] = [{ id: "sys", role: "system", parts: [{ type: "text", text: "Be exact." }] }];
  for (let n = 0; n < turns; n++) {
    out.push({ id: `u${n}`, role: "user", parts: [{ type: "text", text: `Step ${n}?` }] });
    out.push({
      id: `a${n}`,
      role: "assistant",
      parts: [{ type: "tool_call", callId: `c${n}`, name: "run", args: `{"step":${n}}` }],
    });
    out.push({
      id: `r${n}`,
      role: "tool",
      parts: [{ type: "tool_result", callId: `c${n}`, content: `ok ${n} `.repeat(300) }],
    });
    out.push({ id: `d${n}`, role: "assistant", parts: [{ type: "text", text: `Step ${n} done.` }] });
  }
  return out;
}
