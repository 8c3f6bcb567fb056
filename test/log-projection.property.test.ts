// A projected log (restored from a checkpoint, holding only some groups) must answer every question about the
// messages it holds exactly as the whole log does, keep doing so as messages are appended, and fail loudly —
// never answer wrongly — for a message it does not hold.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkpointLog,
  type LogCheckpoint,
  noteStoredIds,
  restoreLog,
} from "../src/checkpoints/log-checkpoint.js";
import { MessageNotLoadedError, ValidationError } from "../src/errors/ledger-error.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { arbitraryLogInputs, fcParams } from "./support/arbitrary-log.js";
import { text } from "./support/builders.js";

interface Case {
  readonly inputs: MessageInput[];
  /** Where the checkpoint is taken (fraction of the log). */
  readonly cut: number;
  /** Which groups the projection is asked to hold (a pick per group). */
  readonly picks: ReadonlyArray<boolean>;
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  inputs: arbitraryLogInputs({ maxOps: 24 }),
  cut: fc.double({ min: 0, max: 1, noNaN: true }),
  picks: fc.array(fc.boolean(), { maxLength: 60 }),
});

/** The checkpoint of the log's first messages, through JSON (as a store keeps it), and its projected log. */
function project(full: ThreadLog, c: Case) {
  const length = Math.max(1, Math.min(full.length, Math.round(c.cut * full.length)));
  const prefix = ThreadLog.fromTrusted(full.threadId, full.messages.slice(0, length));
  const groups = Array.from({ length: prefix.groupCount }, (_, g) => g).filter(
    (g) => c.picks[g % 60] === true,
  );
  const made = checkpointLog(prefix, groups);
  if (made === undefined) return undefined;
  const checkpoint = JSON.parse(JSON.stringify(made.checkpoint)) as LogCheckpoint;
  const held: number[] = [];
  for (let r = 0; r < checkpoint.held.length; r += 2)
    for (let seq = checkpoint.held[r]!; seq < checkpoint.held[r + 1]!; seq++) held.push(seq);
  let decoded = 0;
  const projected = restoreLog(
    checkpoint,
    held.map((seq) => full.at(seq)!),
    () => {
      decoded++;
      return made.absentIds;
    },
  );
  return { prefix, projected, held: new Set(held), decodes: () => decoded, checkpoint };
}

function expectSameAnswers(full: ThreadLog, projected: ThreadLog, held: ReadonlySet<number>, floor: number) {
  expect(projected.length).toBe(full.length);
  expect([...projected.pendingCalls]).toEqual([...full.pendingCalls]);
  expect(projected.groupCount).toBe(full.groupCount);
  expect(projected.turnCount).toBe(full.turnCount);
  expect(projected.turns).toEqual(full.turns);
  expect(projected.lastUserSeq).toBe(full.lastUserSeq);
  expect(projected.pinnedSeqs).toEqual(full.pinnedSeqs);
  expect(projected.stableGroupIndices).toBe(full.stableGroupIndices);
  for (let seq = 0; seq < full.length; seq++) {
    const message = full.at(seq)!;
    expect(projected.idAt(seq)).toBe(message.id);
    expect(projected.seqOf(message.id)).toBe(seq);
    expect(projected.turnIndexOf(seq)).toBe(full.turnIndexOf(seq));
    const isHeld = seq >= floor || held.has(seq);
    expect(projected.holds(seq)).toBe(isHeld);
    if (!isHeld) {
      expect(() => projected.at(seq)).toThrow(MessageNotLoadedError);
      expect(() => projected.byId(message.id)).toThrow(MessageNotLoadedError);
      expect(() => projected.groupIndexOf(seq)).toThrow(MessageNotLoadedError);
      continue;
    }
    expect(projected.at(seq)).toBe(message);
    expect(projected.byId(message.id)).toBe(message);
    expect(projected.answersOf(seq)).toEqual(full.answersOf(seq));
    expect(projected.callSeqsOfParts(seq)).toEqual(full.callSeqsOfParts(seq));
    expect(projected.resultsOf(seq)).toEqual(full.resultsOf(seq));
    const g = full.groupIndexOf(seq);
    expect(projected.groupIndexOf(seq)).toBe(g);
    expect(projected.groupAt(g)).toEqual(full.groupAt(g));
  }
  expect(projected.seqOf("no-such-id")).toBeUndefined();
}

/** The case's whole log and its projection, or undefined when the case makes no checkpoint. */
function arrange(c: Case) {
  const full = ThreadLog.from("t", c.inputs);
  if (!full.stableGroupIndices || full.length === 0) return undefined;
  const made = project(full, c);
  return made === undefined ? undefined : { full, ...made };
}

describe("projected logs", () => {
  it("answer like the whole log for what they hold, before and after appends, and throw for the rest", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const made = arrange(c);
        if (made === undefined) return;
        const { full, prefix, projected, held } = made;
        expectSameAnswers(prefix, projected, held, prefix.length);
        // Rows after the checkpoint arrive as a worker reads them from the store.
        const extended = projected.appendTrusted(full.messages.slice(prefix.length));
        expectSameAnswers(full, extended, held, prefix.length);
        // Filled in place, the id table lists every id, and the projection still answers the same.
        const ids = extended.fullIdTable();
        expect(Array.from({ length: full.length }, (_, seq) => ids[seq])).toEqual(
          full.messages.map((m) => m.id),
        );
        expectSameAnswers(full, extended, held, prefix.length);
        // It checkpoints the groups it holds whole exactly as the whole log does (a restored worker writes the next).
        const whole = Array.from({ length: full.groupCount }, (_, g) => g).filter((g) =>
          full.groupAt(g).seqs.every((seq) => seq >= prefix.length || held.has(seq)),
        );
        expect(checkpointLog(extended, whole)).toEqual(checkpointLog(full, whole));
      }),
      fcParams(300),
    );
  });

  it("decode the ids they do not hold only when one is looked up", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const made = arrange(c);
        if (made === undefined) return;
        const { full } = made;
        // Appending stored rows and asking about held messages decodes nothing.
        const extended = made.projected.appendTrusted(full.messages.slice(made.prefix.length));
        for (const seq of made.held) extended.groupIndexOf(seq);
        extended.groupCount;
        expect(made.decodes()).toBe(0);
        const absent = [...Array(made.prefix.length).keys()].find((seq) => !made.held.has(seq));
        if (absent === undefined) return;
        expect(extended.seqOf(full.at(absent)!.id)).toBe(absent);
        expect(extended.idAt(absent)).toBe(full.at(absent)!.id);
        expect(made.decodes()).toBe(1);
      }),
      fcParams(100),
    );
  });

  it("check an append's ids as the whole log does from the store's answers, decoding nothing", () => {
    // Unique ids (DESIGN.md, log): a worker restored from a checkpoint asks the store about a batch's ids
    // (`noteStoredIds`) instead of reading the checkpoint's tail. Every id of the log, and fresh ones, supplied or
    // generated, must be refused or taken exactly as by the whole log.
    fc.assert(
      fc.property(caseArb, fc.nat(), fc.boolean(), (c, pick, supply) => {
        const made = arrange(c);
        if (made === undefined) return;
        const { full } = made;
        const extended = made.projected.appendTrusted(full.messages.slice(made.prefix.length));
        const existing = full.messages[pick % full.length]!.id;
        const fresh = `fresh-${pick}`;
        for (const id of supply ? [existing, fresh] : [undefined]) {
          const batch: MessageInput[] = [
            { ...(id === undefined ? {} : { id }), role: "user", parts: [text("x")] },
          ];
          const asked = batch.map((m, i) => m.id ?? `msg-${full.length + i}`);
          const found = new Map(
            asked.flatMap((a) => (full.seqOf(a) === undefined ? [] : [[a, full.seqOf(a)!]])),
          );
          noteStoredIds(extended, asked, found);
          const outcome = (log: ThreadLog) => {
            try {
              return log.append(batch).at(full.length)!.id;
            } catch (error) {
              return (error as Error).constructor.name;
            }
          };
          const before = made.decodes();
          const mine = outcome(extended);
          // A generated id another message already has needs the ids not held (the tail) for its next try.
          if (made.decodes() === before) expect(mine).toBe(outcome(full));
        }
        if (supply) expect(made.decodes()).toBe(0);
      }),
      fcParams(200),
    );
  });

  it("refuse a checked append reusing the id of a message they do not hold", () => {
    const full = ThreadLog.from("t", [
      { id: "sys", role: "system", parts: [text("rules")] },
      { id: "u1", role: "user", parts: [text("one")] },
      { id: "a1", role: "assistant", parts: [text("two")] },
      { id: "u2", role: "user", parts: [text("three")] },
    ]);
    const made = checkpointLog(full, [3])!;
    expect(made.checkpoint.held).toEqual([0, 1, 3, 4]);
    expect(made.absentIds).toEqual(["u1", "a1"]);
    const projected = restoreLog(made.checkpoint, [full.at(0)!, full.at(3)!], () => made.absentIds);
    expect(() => projected.append([{ id: "a1", role: "user", parts: [text("again")] }])).toThrow(
      /duplicate message id "a1"/,
    );
    expect(() => projected.messages).toThrow(MessageNotLoadedError);
    const next = projected.append([{ id: "u3", role: "user", parts: [text("four")] }]);
    expect(next.at(4)!.id).toBe("u3");
    expect(next.extends(projected)).toBe(true);
  });

  it("refuse messages that do not fit the checkpoint", () => {
    const full = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [text("one")] },
      { id: "u2", role: "user", parts: [text("two")] },
    ]);
    const made = checkpointLog(full, [1])!;
    expect(() => restoreLog(made.checkpoint, [full.at(0)!], () => made.absentIds)).toThrow(ValidationError);
    expect(() => restoreLog(made.checkpoint, [full.at(1)!, full.at(0)!], () => [])).toThrow(ValidationError);
    // A projected log checkpoints only groups it holds (a worker that loaded a checkpoint writes the next one).
    const projected = restoreLog(made.checkpoint, [full.at(1)!], () => made.absentIds);
    expect(checkpointLog(projected, [0])).toBeUndefined();
    const again = checkpointLog(projected, [1])!;
    expect(again.checkpoint).toEqual(made.checkpoint);
    expect(again.absentIds).toEqual(made.absentIds);
  });
});
