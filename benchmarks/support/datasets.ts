import { parseTranscript } from "../../src/log/import-jsonl.js";
import type { MessageInput, Part } from "../../src/log/message.js";
import { generateSampleSession } from "../../src/sample/sample-session.js";
import { listTrajectories } from "../../test/support/trajectories.js";

function renameCalls(parts: ReadonlyArray<Part>, prefix: string): Part[] {
  return parts.map((p) =>
    p.type === "tool_call" || p.type === "tool_result" ? { ...p, callId: `${prefix}${p.callId}` } : p,
  );
}

/**
 * `count` messages made of the real trajectories concatenated (repeated as often as needed), or undefined when
 * the shared folder is absent. Call ids get a per-copy prefix so a trailing unanswered call of one copy never
 * collides with the next copy's calls. Only the first system prompt is kept: a thread has one, and a hundred
 * pinned prompts would not fit any budget.
 */
export function trajectoryMessages(count: number): MessageInput[] | undefined {
  const files = listTrajectories();
  if (files.length === 0) return undefined;
  const sessions = files.map((f) => parseTranscript(f.text));
  const out: MessageInput[] = [];
  for (let copy = 0; out.length < count; copy++) {
    const session = sessions[copy % sessions.length]!;
    for (const m of session) {
      if (out.length === count) break;
      if (m.role === "system" && out.length > 0) continue;
      out.push({ ...m, parts: renameCalls(m.parts, `c${copy}_`) });
    }
  }
  return out;
}

/** `count` messages of the seeded synthetic generator. */
export function generatedMessages(count: number, seed = 11): MessageInput[] {
  return generateSampleSession({ messages: count, seed });
}
