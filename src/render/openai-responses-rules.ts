/**
 * OpenAI Responses request rules: message roles and content types, every function_call answered by a later
 * function_call_output (paired by nearest earlier unanswered call id), reasoning items followed by their output.
 */
import type { ResponseInputItem } from "openai/resources/responses/responses";

const quote = (s: string): string => JSON.stringify(s);
const list = (ids: Iterable<string>): string => [...ids].map(quote).join(", ");
const typeOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

interface OpenCall {
  readonly id: string;
  readonly index: number;
  answered: boolean;
}

const RESPONSES_ROLES = new Set(["user", "assistant", "system", "developer"]);
const INPUT_CONTENT_TYPES = new Set(["input_text", "input_image", "input_file", "input_audio"]);
const OUTPUT_CONTENT_TYPES = new Set(["output_text", "refusal"]);

/** Problems of an OpenAI Responses body: message roles and content, function call / output pairing, reasoning. */
export function validateOpenAIResponses(body: {
  readonly instructions?: string | null | undefined;
  readonly input: ReadonlyArray<ResponseInputItem>;
}): string[] {
  const problems: string[] = [];
  if (body.input.length === 0 && (body.instructions ?? "") === "")
    problems.push("input is empty and so are instructions");
  const calls: OpenCall[] = [];
  body.input.forEach((item, i) => {
    const at = `input[${i}]`;
    const type = "type" in item && item.type !== undefined ? item.type : "message";
    if (type === "message" && "role" in item && "content" in item)
      problems.push(...responsesMessageProblems(item, at));
    if (item.type === "function_call") {
      if (item.call_id === "" || item.name === "")
        problems.push(`${at}: function_call needs a call_id and a name`);
      if (typeof item.arguments !== "string")
        problems.push(`${at}: function_call arguments must be a string`);
      calls.push({ id: item.call_id, answered: false, index: i });
    }
    if (item.type === "function_call_output") {
      const call = calls.findLast((c) => !c.answered && c.id === item.call_id);
      if (call !== undefined) call.answered = true;
      else
        problems.push(
          `${at}: function_call_output for ${quote(item.call_id)} has no earlier unanswered function_call`,
        );
    }
    if (item.type === "reasoning") problems.push(...reasoningProblems(body.input, i));
  });
  for (const call of calls) {
    if (!call.answered)
      problems.push(`input[${call.index}]: function_call ${quote(call.id)} has no function_call_output`);
  }
  return problems;
}

function responsesMessageProblems(
  item: { readonly role: string; readonly content: unknown },
  at: string,
): string[] {
  if (!RESPONSES_ROLES.has(item.role))
    return [`${at}: role ${quote(item.role)} is not one of ${list(RESPONSES_ROLES)}`];
  if (typeof item.content === "string") return [];
  if (!Array.isArray(item.content) || item.content.length === 0) {
    return [`${at}: content must be a string or a non-empty array, got ${typeOf(item.content)}`];
  }
  const allowed = item.role === "assistant" ? OUTPUT_CONTENT_TYPES : INPUT_CONTENT_TYPES;
  return item.content.flatMap((part: { type?: unknown }, k) =>
    typeof part.type === "string" && allowed.has(part.type)
      ? []
      : [
          `${at}.content[${k}]: content type ${quote(String(part.type))} is not allowed in a ${item.role} message`,
        ],
  );
}

function reasoningProblems(input: ReadonlyArray<ResponseInputItem>, i: number): string[] {
  const item = input[i];
  if (item?.type !== "reasoning") return [];
  const problems = item.id === "" ? [`input[${i}]: reasoning item has no id`] : [];
  let next = i + 1;
  while (input[next]?.type === "reasoning") next += 1;
  const follower = input[next];
  const answersIt =
    follower !== undefined &&
    (follower.type === "function_call" || ("role" in follower && follower.role === "assistant"));
  if (!answersIt)
    problems.push(
      `input[${i}]: reasoning item is not followed by the function_call or assistant message it produced`,
    );
  return problems;
}
