import { describe, expect, it } from "vitest";
import { exportTranscript, importTranscript, readTranscriptFile } from "../src/log/import-jsonl.js";
import { toolCallsOf } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import {
  listTrajectories,
  readSourcesTable,
  type TrajectoryFile,
  trajectoriesAvailable,
  trajectory,
} from "./support/trajectories.js";

interface RawLine {
  readonly role: string;
  readonly content: string;
  readonly tool_calls?: ReadonlyArray<{ readonly id: string }>;
  readonly tool_call_id?: string;
  readonly reasoning?: string;
}

function rawLines(file: TrajectoryFile): RawLine[] {
  return file.text
    .split(/\r\n|\n|\r/)
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as RawLine);
}

function importFile(file: TrajectoryFile): ThreadLog {
  return importTranscript(ThreadLog.empty(`traj:${file.name}`), file.text, { source: file.name });
}

/**
 * Reference pairing written independently of the log: each result answers the nearest earlier unanswered call
 * with the same id (SOURCES.md: never a global id → call map). Returns, per tool line, the index of the call line.
 */
function referencePairing(lines: ReadonlyArray<RawLine>): Map<number, number> {
  const out = new Map<number, number>();
  const answered = new Set<string>();
  lines.forEach((line, i) => {
    if (line.role !== "tool") return;
    for (let j = i - 1; j >= 0; j--) {
      const k = (lines[j]?.tool_calls ?? []).findIndex(
        (c) => c.id === line.tool_call_id && !answered.has(`${j}:${c.id}`),
      );
      if (k < 0) continue;
      answered.add(`${j}:${line.tool_call_id}`);
      out.set(i, j);
      return;
    }
  });
  return out;
}

const files = listTrajectories();
const sources = readSourcesTable();

describe.skipIf(!trajectoriesAvailable)("real trajectories: JSONL import", () => {
  it("finds the files listed in SOURCES.md, and only those", () => {
    expect(files.map((f) => f.name)).toEqual([...sources.keys()].sort());
    expect(files.length).toBe(14);
  });

  describe.each(files.map((file) => [file.name, file] as const))("%s", (name, file) => {
    const source = sources.get(name)!;
    const log = importFile(file);
    const lines = rawLines(file);

    it("imports one message per line, with the counts of SOURCES.md", () => {
      expect(log.length).toBe(lines.length);
      expect(log.length).toBe(source.messages);
      expect(log.messages.map((m) => m.role)).toEqual(lines.map((l) => l.role));
      expect(log.messages.reduce((n, m) => n + toolCallsOf(m).length, 0)).toBe(source.toolCalls);
      expect(log.messages.every((m, i) => m.meta.sourceLine === i + 1 && m.meta.source === name)).toBe(true);
    });

    it("leaves exactly the unanswered calls of SOURCES.md pending", () => {
      expect([...log.pendingCalls.keys()]).toEqual(source.unansweredCalls);
      for (const call of log.pendingCalls.values()) {
        // A trailing unanswered call: no tool line after it answers it.
        expect(log.resultsOf(call.seq)).toEqual([]);
      }
    });

    it("pairs every result with the nearest earlier unanswered call of that id", () => {
      const expected = referencePairing(lines);
      lines.forEach((line, i) => {
        if (line.role === "tool") expect(log.answersOf(i), `line ${i + 1}`).toEqual([expected.get(i)]);
      });
    });

    it("puts every tool message in the tool_call group of its call, each message in exactly one group", () => {
      const seen = new Array<number>(log.length).fill(0);
      const groupOf = new Map<number, number>();
      for (const group of log.groups) {
        for (const seq of group.seqs) {
          seen[seq]! += 1;
          groupOf.set(seq, group.index);
        }
      }
      expect(seen.every((n) => n === 1)).toBe(true);
      for (const message of log.messages) {
        if (message.role !== "tool") continue;
        const [callSeq] = log.answersOf(message.seq);
        const group = log.groups[groupOf.get(message.seq)!]!;
        expect(group.kind).toBe("tool_call");
        expect(group.seqs).toContain(callSeq);
      }
      const pendingGroups = log.groups.filter((g) => g.pending);
      expect(pendingGroups.length).toBe(source.unansweredCalls.length);
    });

    it("exports back to the same lines (compared as parsed JSON)", () => {
      const exported = exportTranscript(log);
      expect(exported.endsWith("\n")).toBe(true);
      const back = exported
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as unknown);
      expect(back).toEqual(lines);
      // And the export imports to the same content.
      const again = importTranscript(ThreadLog.empty("again"), exported);
      expect(again.messages.map((m) => m.hash)).toEqual(log.messages.map((m) => m.hash));
    });

    it("gives the same ids and hashes on a second import", () => {
      const second = importTranscript(ThreadLog.empty("other-thread"), file.text);
      expect(second.messages.map((m) => m.hash)).toEqual(log.messages.map((m) => m.hash));
      expect(second.messages.map((m) => m.id)).toEqual(log.messages.map((m) => m.id));
      expect(new Set(log.messages.map((m) => m.hash)).size).toBeGreaterThan(0);
    });
  });

  it("reads a file from disk with its path as the source", () => {
    const file = trajectory("tau-bench/airline-gpt-4o-task47-trial1.jsonl");
    const log = readTranscriptFile(ThreadLog.empty("t"), file.path);
    expect(log.length).toBe(10);
    expect(log.at(0)?.meta.source).toBe(file.path);
    expect(log.pendingCalls.size).toBe(0);
    expect(log.groups.every((g) => g.kind !== "tool_call")).toBe(true);
  });

  it.each([
    "tau-bench/airline-gpt-4o-task2-trial1.jsonl",
    "tau-bench/airline-gpt-4o-task13-trial2.jsonl",
    "swe-agent/demo-function-calling-marshmallow-1867.jsonl",
  ])("handles the reused call ids of %s", (name) => {
    const log = importFile(trajectory(name));
    const callsById = new Map<string, number[]>();
    for (const m of log.messages) {
      for (const call of toolCallsOf(m))
        callsById.set(call.callId, [...(callsById.get(call.callId) ?? []), m.seq]);
    }
    const reused = [...callsById].filter(([, seqs]) => seqs.length > 1);
    expect(reused.length).toBeGreaterThan(0);
    for (const [, seqs] of reused) {
      // Each use of the id is answered by its own result, which comes after it and before the next use.
      seqs.forEach((seq, k) => {
        const results = log.resultsOf(seq);
        expect(results).toHaveLength(1);
        expect(results[0]!).toBeGreaterThan(seq);
        expect(results[0]!).toBeLessThan(seqs[k + 1] ?? Number.POSITIVE_INFINITY);
      });
    }
  });

  it("keeps consecutive same-role lines as separate messages and groups", () => {
    const pairs = (name: string, a: string, b: string): number => {
      const log = importFile(trajectory(name));
      return log.messages.filter((m, i) => i > 0 && m.role === b && log.at(i - 1)?.role === a).length;
    };
    expect(pairs("swe-agent/gpt4-pydicom__pydicom-1458.jsonl", "user", "user")).toBe(1);
    expect(pairs("toolbench/G3-15-chatgpt-dfs.jsonl", "assistant", "assistant")).toBe(1);
    expect(pairs("toolbench/G3-15-chatgpt-dfs.jsonl", "tool", "user")).toBe(1);
    expect(pairs("openhands/multi-swe-bench-ponylang__ponyc-4588.jsonl", "tool", "user")).toBe(1);
    const pydicom = importFile(trajectory("swe-agent/gpt4-pydicom__pydicom-1458.jsonl"));
    expect(pydicom.groups.slice(0, 3).map((g) => g.kind)).toEqual(["system", "user", "user"]);
  });

  it("imports the optional reasoning field as a leading reasoning part", () => {
    const plain = importFile(trajectory("mini-swe-agent/django__django-11163.jsonl"));
    const withReasoning = importFile(trajectory("mini-swe-agent/django__django-11163.with-reasoning.jsonl"));
    const reasoned = withReasoning.messages.filter((m) => m.parts.some((p) => p.type === "reasoning"));
    expect(reasoned.length).toBeGreaterThan(0);
    for (const m of reasoned) {
      expect(m.role).toBe("assistant");
      expect(m.parts[0]?.type).toBe("reasoning");
      expect(m.parts.filter((p) => p.type === "reasoning")).toHaveLength(1);
    }
    // Apart from the reasoning parts the two files hold the same messages.
    const strip = (log: ThreadLog) => log.messages.map((m) => m.parts.filter((p) => p.type !== "reasoning"));
    expect(strip(withReasoning)).toEqual(strip(plain));
    expect(withReasoning.groups.map((g) => g.seqs)).toEqual(plain.groups.map((g) => g.seqs));
  });
});
