import { describe, expect, it } from "vitest";
import { ValidationError } from "../errors/ledger-error.js";
import { hashMessageContent } from "../log/canonical-json.js";
import type { Message } from "../log/message.js";
import { checkAppendBatch, normalizeRanges, type StoredMessage } from "./log-store.js";

const entry = (seq: number, id: string): StoredMessage => {
  const parts = [{ type: "text", text: id }] as const;
  const message: Message = {
    id,
    seq,
    role: "user",
    parts,
    meta: {},
    hash: hashMessageContent("user", parts),
  };
  return { message, tokens: { c: 1 } };
};

describe("normalizeRanges", () => {
  it("sorts, drops empty ranges and merges overlapping or touching ones", () => {
    const ranges = [
      { from: 8, to: 9 },
      { from: 0, to: 2 },
      { from: 2, to: 4 },
      { from: 3, to: 3 },
      { from: 1, to: 3 },
    ];
    expect(normalizeRanges("t", ranges)).toEqual([
      { from: 0, to: 4 },
      { from: 8, to: 9 },
    ]);
  });

  it("refuses negative or fractional bounds", () => {
    expect(() => normalizeRanges("t", [{ from: -1, to: 2 }])).toThrow(ValidationError);
    expect(() => normalizeRanges("t", [{ from: 0, to: 1.5 }])).toThrow(/to must be a non-negative integer/);
  });
});

describe("checkAppendBatch", () => {
  it("accepts a batch continuing at expectedSeq", () => {
    expect(() => checkAppendBatch("t", 3, [entry(3, "a"), entry(4, "b")])).not.toThrow();
  });

  it("names the batch index, message id and field of the first problem", () => {
    const error = (() => {
      try {
        checkAppendBatch("t", 0, [entry(0, "a"), entry(1, "a")]);
      } catch (e) {
        return e as ValidationError;
      }
    })();
    expect(error?.where).toEqual({ threadId: "t", index: 1, messageId: "a", field: "id" });
    expect(() => checkAppendBatch("t", 0, [entry(1, "a")])).toThrow(/seq 1 does not continue the batch/);
  });
});
