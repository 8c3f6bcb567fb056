import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryBatches, fcParams, fusedIdReuseLog } from "../../test/support/arbitrary-log.js";
import { call, result, text, validationError } from "../../test/support/builders.js";
import type { Message, MessageInput } from "./message.js";
import { ThreadLog } from "./thread-log.js";
import { turnIndexOf } from "./turns.js";

const inputOf = ({ id, role, parts, meta }: Message): MessageInput => ({ id, role, parts, meta });

/** Everything a log derives from its messages, in a comparable form. */
function derived(log: ThreadLog) {
  return {
    messages: log.messages,
    pending: [...log.pendingCalls],
    groups: log.groups,
    turns: log.turns,
    links: log.messages.map((m) => [log.answersOf(m.seq), log.callSeqsOfParts(m.seq), log.resultsOf(m.seq)]),
    pinned: log.pinnedSeqs,
  };
}

describe("ThreadLog.appendTrusted", () => {
  it("rebuilds exactly the log that append built, batch by batch (random logs)", () => {
    fc.assert(
      fc.property(arbitraryBatches(), (batches) => {
        const checked = ThreadLog.from("t", batches.flat());
        let trusted = ThreadLog.empty("t");
        let at = 0;
        for (const batch of batches) {
          trusted = trusted.appendTrusted(checked.messages.slice(at, at + batch.length));
          at += batch.length;
        }
        expect(derived(trusted)).toEqual(derived(checked));
        expect(trusted.at(0)).toBe(checked.at(0));
      }),
      fcParams(150),
    );
  });

  it("rejects stored messages that do not continue the log, reuse an id or answer no pending call", () => {
    const log = ThreadLog.from("t", [
      { id: "u", role: "user", parts: [text("go")] },
      { id: "a", role: "assistant", parts: [call("c1")] },
      { id: "r", role: "tool", parts: [result("c1", "ok")] },
    ]);
    const [u, a, r] = log.messages as [Message, Message, Message];
    expect(validationError(() => ThreadLog.fromTrusted("t", [a])).where.field).toBe("seq");
    expect(validationError(() => log.appendTrusted([{ ...u, seq: 3 }])).where.field).toBe("id");
    const orphan = validationError(() => ThreadLog.fromTrusted("t", [u, { ...r, seq: 1 }]));
    expect(orphan.where.field).toBe("parts[0].callId");
    expect(ThreadLog.fromTrusted("t", [u, a]).pendingCalls.has("c1")).toBe(true);
    // The pairing rules of a checked append hold here too: a call id reused while still unanswered, a tool
    // part in a user message.
    const again = { ...a, id: "a2", seq: 2 };
    expect(validationError(() => ThreadLog.fromTrusted("t", [u, a, again])).message).toMatch(/reused/);
    const misplaced = { ...u, id: "u2", seq: 1, parts: [call("c9")] };
    expect(validationError(() => ThreadLog.fromTrusted("t", [u, misplaced])).where.field).toBe(
      "parts[0].type",
    );
  });
});

describe("views a turn reads without materializing the log", () => {
  it("turnCount, turnIndexOf and lastUserSeq agree with turns on every prefix (random logs)", () => {
    fc.assert(
      fc.property(arbitraryBatches(), (batches) => {
        const full = ThreadLog.from("t", batches.flat());
        for (let n = 0; n <= full.length; n++) {
          const log = ThreadLog.fromTrusted("t", full.messages.slice(0, n));
          expect(log.turnCount).toBe(log.turns.length);
          for (let seq = 0; seq < n; seq++) expect(log.turnIndexOf(seq)).toBe(turnIndexOf(log.turns, seq));
          const users = log.messages.filter((m) => m.role === "user");
          expect(log.lastUserSeq).toBe(users[users.length - 1]?.seq ?? -1);
        }
      }),
      fcParams(60),
    );
  });

  it("shares a history memo between the values of one history, not with a branch", () => {
    const first = ThreadLog.from("t", [{ role: "user", parts: [text("a")] }]);
    const memo = first.historyMemo("k", () => ({}));
    const later = first.append([{ role: "user", parts: [text("b")] }]);
    expect(later.historyMemo("k", () => ({}))).toBe(memo);
    const branch = first.append([{ role: "user", parts: [text("c")] }]);
    expect(branch.historyMemo("k", () => ({}))).not.toBe(memo);
  });

  it("says whether group indices are the history's shared ones", () => {
    const plain = ThreadLog.from("t", [{ role: "user", parts: [text("a")] }]);
    expect(plain.stableGroupIndices).toBe(true);
    const fused = fusedIdReuseLog();
    expect(fused.stableGroupIndices).toBe(false);
    const before = ThreadLog.fromTrusted("t", fused.messages.slice(0, 1));
    expect(before.stableGroupIndices).toBe(true);
    expect(
      ThreadLog.fromTrusted(
        "t",
        fused.messages.map((m) => m),
      ).groups,
    ).toEqual(ThreadLog.from("t", fused.messages.map(inputOf)).groups);
  });
});
