/**
 * What a clear leaves of a tool result by its durability class: a `replayable` result's placeholder repeats its
 * determinism metadata (so the model can call again and tell whether it changed), an `anchoring` result keeps its
 * key lines, and a `non-replayable` result is never cleared at all.
 */
import { createHash } from "node:crypto";
import { type LogView, toolNameOfResult } from "../log/log-view.js";
import type { Durability, Message, ToolResultPart } from "../log/message.js";
import type { ClearExcerpt } from "../plan/compaction-plan.js";
import { keyLinesResultText, stampedResultText } from "../texts/placeholders.js";
import { DEFAULT_DURABILITY_CLASSES, type DurabilityClasses } from "./durability-classes.js";
import { rarityOf, salientLines, wordsOf } from "./salient-lines.js";
import type { StrategyContext } from "./strategy.js";

/** Meta fields a harness may set on a result message to say which version of the data it saw, strongest first. */
export const DETERMINISM_FIELDS = ["version", "etag", "mtime", "contentHash"] as const;

/**
 * The determinism metadata a cleared replayable result repeats: the first of `meta.version`, `meta.etag`,
 * `meta.mtime`, `meta.contentHash` the result message carries (strings or numbers), else the sha256 of the
 * result's content as the log holds it (every logged result has one, so a replayable result can always be
 * stamped), shortened to 8 hex digits (enough to tell two versions apart).
 */
export function determinismStamp(message: Message, part: ToolResultPart): string {
  for (const field of DETERMINISM_FIELDS) {
    const value = message.meta[field];
    if ((typeof value === "string" && value.length > 0) || typeof value === "number") {
      return `${field} ${JSON.stringify(value)}`;
    }
  }
  return `sha256 ${createHash("sha256").update(part.content).digest("hex").slice(0, 8)}`;
}

/** The pipeline's classes, or the built-in ones in a hand-built context. */
export function classesOf(ctx: Pick<StrategyContext, "durability">): DurabilityClasses {
  return ctx.durability ?? DEFAULT_DURABILITY_CLASSES;
}

/** The class of one result part of the tool message at `seq` (see `DurabilityClasses.classOfResult`). */
export function resultClass(
  log: LogView,
  classes: DurabilityClasses,
  seq: number,
  partIndex: number,
): Durability | undefined {
  return classes.classOfResult(log, seq, partIndex);
}

/** Whether no clear may touch the message at `seq`: a tool message holding a `non-replayable` result. */
export function neverCleared(log: LogView, classes: DurabilityClasses, seq: number): boolean {
  const message = log.at(seq)!;
  if (message.role !== "tool") return false;
  return message.parts.some(
    (p, i) => p.type === "tool_result" && resultClass(log, classes, seq, i) === "non-replayable",
  );
}

/** Options of {@link durableExcerpts}. */
export interface DurableExcerptOptions {
  /** Key lines an `anchoring` result keeps: most lines and tokens (default 4 lines, 80 tokens). */
  readonly maxLines?: number;
  readonly maxTokens?: number;
  /** Counts the tokens of a line (default: one per 4 characters). */
  readonly countTokens?: (text: string) => number;
}

/**
 * The excerpts a clear of the tool messages at `seqs` gives by class: every `replayable` result its stamped
 * placeholder; every `anchoring` result its placeholder and key lines (rarity within the result itself, so this
 * reads nothing else of the thread). Unclassed and `ephemeral` results get none (the bare placeholder).
 */
export function durableExcerpts(
  log: LogView,
  classes: DurabilityClasses,
  seqs: Iterable<number>,
  options: DurableExcerptOptions = {},
): ClearExcerpt[] {
  const out: ClearExcerpt[] = [];
  for (const seq of seqs) {
    const message = log.at(seq)!;
    if (message.role !== "tool") continue;
    message.parts.forEach((part, partIndex) => {
      if (part.type !== "tool_result") return;
      const d = resultClass(log, classes, seq, partIndex);
      if (d !== "replayable" && d !== "anchoring") return;
      const tool = toolNameOfResult(log, seq, partIndex) ?? "";
      let text: string;
      if (d === "replayable") {
        // Always stamped, even when the placeholder saves little: the stamp is what makes clearing it safe.
        text = stampedResultText(tool, part.content.length, determinismStamp(message, part));
      } else {
        const lines = part.content.split("\n");
        const rarity = rarityOf(lines.map((line) => wordsOf(line)));
        const kept = salientLines(part.content, rarity, {
          maxLines: options.maxLines ?? 4,
          maxTokens: options.maxTokens ?? 80,
          ...(options.countTokens === undefined ? {} : { countTokens: options.countTokens }),
        });
        if (kept.length === 0) return;
        text = keyLinesResultText(tool, part.content.length, kept);
        // Lines that would not save anything: the bare placeholder is all a clear can do.
        if (text.length >= part.content.length) return;
      }
      out.push({ messageId: message.id, partIndex, text });
    });
  }
  return out;
}

/**
 * Whether clearing the tool message at `seq` pays for every replayable result in it: each is at least twice as
 * long as its stamped placeholder (the stamp's hex digits take more tokens per character than prose, so the
 * margin keeps a clear from growing the request without counting tokens). A shorter replayable result stays as
 * it is: the stamp is what makes clearing it safe.
 */
export function stampsSave(log: LogView, classes: DurabilityClasses, seq: number): boolean {
  const message = log.at(seq)!;
  if (message.role !== "tool") return true;
  return message.parts.every((part, i) => {
    if (part.type !== "tool_result" || resultClass(log, classes, seq, i) !== "replayable") return true;
    const text = stampedResultText(
      toolNameOfResult(log, seq, i) ?? "",
      part.content.length,
      determinismStamp(message, part),
    );
    return text.length * 2 <= part.content.length;
  });
}
