import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseTranscript } from "../../src/log/import-jsonl.js";
import type { MessageInput, Part } from "../../src/log/message.js";
import { generateSampleSession } from "../../src/sample/sample-session.js";

/** Where the shared real trajectories live (read in place, never copied into the repository). */
export const TRAJECTORY_DIR = resolve(
  process.env.CONTEXT_LEDGER_TRAJECTORIES ?? join(import.meta.dirname, "../../../shared/data/trajectories"),
);

/** Paths of every shared trajectory file, or an empty list when the folder is absent. */
export function trajectoryFiles(): string[] {
  try {
    statSync(TRAJECTORY_DIR);
  } catch {
    return [];
  }
  return readdirSync(TRAJECTORY_DIR)
    .flatMap((dir) => {
      const full = join(TRAJECTORY_DIR, dir);
      return statSync(full).isDirectory()
        ? readdirSync(full)
            .filter((f) => f.endsWith(".jsonl"))
            .map((f) => join(full, f))
        : [];
    })
    .sort();
}

function renameCalls(parts: ReadonlyArray<Part>, prefix: string): Part[] {
  return parts.map((p) =>
    p.type === "tool_call" || p.type === "tool_result" ? { ...p, callId: `${prefix}${p.callId}` } : p,
  );
}

/**
 * `count` messages made of the real trajectories concatenated (repeated as often as needed); call ids get a
 * per-copy prefix so a trailing unanswered call of one copy never collides with the next copy's calls. Only
 * the first system prompt is kept: a thread has one, and a hundred pinned prompts would not fit any budget.
 */
export function trajectoryMessages(count: number): MessageInput[] | undefined {
  const files = trajectoryFiles();
  if (files.length === 0) return undefined;
  const sessions = files.map((f) => parseTranscript(readFileSync(f, "utf8")));
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
