/**
 * What every summarizer shares: the readable text of a structured summary, fitting it into a token budget and
 * merging two summaries. The model prompt lives in `summary-prompt.ts`, the reading of a model's answer in
 * `model-answer.ts`.
 */
import { deepFreeze } from "../../log/deep-freeze.js";
import type { StructuredSummary } from "../../plan/compaction-plan.js";

/** One list field of a structured summary. */
export type SummaryField = keyof StructuredSummary;

/** Section titles, in the order the text shows them. */
const TITLES: { readonly [F in SummaryField]-?: string } = {
  goals: "Goals",
  // Facts stated in the thread (names, numbers, identifiers) sit beside the rules that bind the work.
  constraints: "Facts and constraints",
  decisions: "Decisions",
  openItems: "Open items",
  toolOutcomes: "Tool outcomes",
  artifacts: "Artifacts",
};

/** The six fields in display order. */
export const SUMMARY_FIELDS: ReadonlyArray<SummaryField> = Object.freeze(
  Object.keys(TITLES) as SummaryField[],
);

/** Counts tokens the cheap way (about four characters per token) when no tokenizer is given. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/** Whitespace other than single spaces: what `normalizeItem` has to collapse. */
const UNEVEN_SPACE = /[^\S ]|\s\s/;

/** Collapses whitespace so each item is one line of the text. */
export function normalizeItem(item: string): string {
  // Most lines have single spaces only: collapsing them would copy the line for nothing.
  return UNEVEN_SPACE.test(item) ? item.replace(/\s+/g, " ").trim() : item.trim();
}

/** Shortens text to `max` characters plus a note saying how much was left out. */
export function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} chars omitted]`;
}

function capItem(item: string, max: number): string {
  return item.length <= max ? item : `${item.slice(0, Math.max(1, max - 1)).trimEnd()}…`;
}

/**
 * The readable text of a summary: one section per non-empty field ("Goals:\n- …"), sections separated by a
 * blank line. Deterministic: the same structure always gives the same bytes.
 */
export function formatSummary(structured: StructuredSummary): string {
  const sections: string[] = [];
  for (const field of SUMMARY_FIELDS) {
    const items = (structured[field] ?? []).map(normalizeItem).filter((item) => item !== "");
    if (items.length > 0) sections.push(`${TITLES[field]}:\n${items.map((item) => `- ${item}`).join("\n")}`);
  }
  return sections.join("\n\n");
}

/** How `fitSummary` measures and trims. */
export interface FitOptions {
  /** Token count of a text; default `estimateTokens`. */
  readonly countTokens?: (text: string) => number;
  /** Longest item in characters; longer ones are cut with "…" (default 240). */
  readonly maxItemChars?: number;
}

// Lower weight = dropped earlier. Within a field older items (lower index) go first, so the weights overlap
// and a recent tool outcome can outlive an old decision. The first goal (the task as first stated) goes last.
const WEIGHTS: { readonly [F in SummaryField]-?: number } = {
  toolOutcomes: 0,
  decisions: 0.4,
  artifacts: 0.4,
  openItems: 0.8,
  goals: 0.8,
  constraints: 1.2,
};

type Fields = { [F in SummaryField]: string[] };

function build(fields: Fields, removed: ReadonlySet<string>): StructuredSummary {
  const out: { [F in SummaryField]?: string[] } = {};
  for (const field of SUMMARY_FIELDS) {
    const kept = fields[field].filter((_, i) => !removed.has(`${field}:${i}`));
    if (kept.length > 0) out[field] = kept;
  }
  return out;
}

/**
 * Normalizes a summary (one-line, de-duplicated, length-capped items) and drops the least important, oldest
 * items until `formatSummary` fits `maxTokens`. Returns `undefined` when not even one shortened item fits.
 */
export function fitSummary(
  structured: StructuredSummary,
  maxTokens: number,
  options: FitOptions = {},
): StructuredSummary | undefined {
  const count = options.countTokens ?? estimateTokens;
  const maxItemChars = options.maxItemChars ?? 240;
  const fields = {} as Fields;
  for (const field of SUMMARY_FIELDS) {
    const items = (structured[field] ?? []).map((item) => capItem(normalizeItem(item), maxItemChars));
    fields[field] = [...new Set(items.filter((item) => item !== ""))];
  }
  const order = SUMMARY_FIELDS.flatMap((field) =>
    fields[field].map((_, i, all) => ({
      key: `${field}:${i}`,
      priority: WEIGHTS[field] + (i + 1) / (all.length + 1) + (field === "goals" && i === 0 ? 10 : 0),
    })),
  ).sort((a, b) => a.priority - b.priority);
  if (order.length === 0) return undefined;
  const withDropped = (k: number) => build(fields, new Set(order.slice(0, k).map((o) => o.key)));
  const fits = (s: StructuredSummary) => count(formatSummary(s)) <= maxTokens;
  // Dropping items only shortens the text, so the smallest number of drops that fits is found by bisection.
  if (fits(withDropped(0))) return deepFreeze(withDropped(0));
  let lo = 1;
  let hi = order.length - 1;
  if (!fits(withDropped(hi))) return shortenLast(withDropped(hi), fits);
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fits(withDropped(mid))) hi = mid;
    else lo = mid + 1;
  }
  return deepFreeze(withDropped(lo));
}

function shortenLast(
  single: StructuredSummary,
  fits: (s: StructuredSummary) => boolean,
): StructuredSummary | undefined {
  const field = SUMMARY_FIELDS.find((f) => (single[f]?.length ?? 0) > 0);
  const item = field === undefined ? undefined : single[field]?.[0];
  if (field === undefined || item === undefined) return undefined;
  for (let max = Math.floor(item.length / 2); max >= 16; max = Math.floor(max / 2)) {
    const candidate = { [field]: [capItem(item, max)] };
    if (fits(candidate)) return deepFreeze(candidate);
  }
  return undefined;
}

/** One candidate item of a summary and how much it is worth keeping. */
export interface RankedItem {
  readonly field: SummaryField;
  readonly text: string;
  /** Higher is kept longer; the least valuable items are dropped first. */
  readonly priority: number;
  /** Reading position within its field (ascending): kept items are shown in this order. */
  readonly order: number;
  /**
   * More of the item, appended to `text` only while room allows and worth `priority` of its own: a call line
   * keeps its outcome while there is room, and loses it before the call line itself goes.
   */
  readonly detail?: { readonly text: string; readonly priority: number };
}

/** One step of the greedy choice: an item itself, or the upgrade of a chosen item to its text with detail. */
interface Unit {
  readonly item: RankedItem;
  readonly priority: number;
  readonly upgrade: boolean;
}

/** What the greedy choice took, in the order it took it (the last taken is the first given back). */
interface Taken {
  readonly key: string;
  /** `detail`: only the detail was taken (the item was chosen earlier); `whole`: the item with its detail. */
  readonly what: "item" | "whole" | "detail";
}

const keyOf = (item: RankedItem): string => `${item.field}\u0000${item.text}`;
const fullText = (item: RankedItem, maxItemChars: number): string =>
  item.detail === undefined ? item.text : capItem(normalizeItem(item.text + item.detail.text), maxItemChars);

function unitsOf(ranked: ReadonlyArray<RankedItem>): Unit[] {
  const units: Unit[] = [];
  for (const item of ranked) {
    units.push({ item, priority: item.priority, upgrade: false });
    // A detail worth more than its item is tried together with it (see `fitRanked`).
    if (item.detail !== undefined && item.detail.priority < item.priority)
      units.push({ item, priority: item.detail.priority, upgrade: true });
  }
  return units.sort(
    (a, b) =>
      b.priority - a.priority ||
      a.item.order - b.item.order ||
      (a.item.text < b.item.text ? -1 : a.item.text > b.item.text ? 1 : 0) ||
      Number(a.upgrade) - Number(b.upgrade),
  );
}

/**
 * Keeps the most valuable items whose text fits `maxTokens`: items are taken by priority (ties by order, then
 * text), each while its estimated cost still fits, so a small item can use room a big one could not; an item's
 * detail is appended at the detail's own priority (or with the item when it is worth more, else the item
 * alone when both do not fit). The exact count of the result is then checked and the least valuable things
 * taken are given back (a detail before its item) until it fits. Kept items read in `order` within their
 * field. Returns `undefined` when not even one shortened item fits.
 */
export function fitRanked(
  items: ReadonlyArray<RankedItem>,
  maxTokens: number,
  options: FitOptions = {},
): StructuredSummary | undefined {
  const count = options.countTokens ?? estimateTokens;
  const maxItemChars = options.maxItemChars ?? 240;
  const ranked = uniqueItems(items, maxItemChars);
  if (ranked.length === 0) return undefined;
  const texts = new Map<string, string>();
  const byKey = new Map<string, RankedItem>();
  const taken: Taken[] = [];
  const opened = new Set<SummaryField>();
  const lineCost = (text: string) => count(`- ${text}`) + 1;
  let used = 0;
  for (const { item, upgrade } of unitsOf(ranked)) {
    const key = keyOf(item);
    if (upgrade) {
      if (texts.get(key) !== item.text) continue;
      const full = fullText(item, maxItemChars);
      const extra = lineCost(full) - lineCost(item.text);
      if (used + extra > maxTokens) continue;
      used += extra;
      texts.set(key, full);
      taken.push({ key, what: "detail" });
      continue;
    }
    // Sections are joined by a blank line and each item is a line: the parts' counts bound the whole's.
    const header = opened.has(item.field) ? 0 : count(`${TITLES[item.field]}:`) + 2;
    const whole = item.detail !== undefined && item.detail.priority >= item.priority;
    const choices = whole ? [fullText(item, maxItemChars), item.text] : [item.text];
    const text = choices.find((t) => used + header + lineCost(t) <= maxTokens);
    if (text === undefined) continue;
    used += header + lineCost(text);
    opened.add(item.field);
    texts.set(key, text);
    byKey.set(key, item);
    taken.push({ key, what: text === item.text ? "item" : "whole" });
  }
  while (taken.length > 0) {
    const summary = arrange([...texts].map(([key, text]) => ({ ...byKey.get(key)!, text })));
    const over = count(formatSummary(summary)) - maxTokens;
    if (over <= 0) return deepFreeze(summary);
    // Give back the least valuable things taken worth about the excess (at least one), then measure again.
    let freed = 0;
    while (taken.length > 0 && (freed === 0 || freed < over)) {
      const last = taken.pop()!;
      const item = byKey.get(last.key)!;
      const text = texts.get(last.key)!;
      if (last.what !== "item") {
        freed += lineCost(text) - lineCost(item.text);
        texts.set(last.key, item.text);
        // An item taken with its detail keeps its place once the detail is given back: it goes next.
        if (last.what === "whole") taken.push({ key: last.key, what: "item" });
      } else {
        freed += lineCost(text);
        texts.delete(last.key);
      }
    }
  }
  const best = unitsOf(ranked)[0]!.item;
  return shortenLast({ [best.field]: [best.text] }, (s) => count(formatSummary(s)) <= maxTokens);
}

function uniqueItems(items: ReadonlyArray<RankedItem>, maxItemChars: number): RankedItem[] {
  const byKey = new Map<string, RankedItem>();
  for (const item of items) {
    const text = capItem(normalizeItem(item.text), maxItemChars);
    if (text === "") continue;
    const key = `${item.field}\u0000${text}`;
    const known = byKey.get(key);
    // A repeated item keeps its best priority and its first position, and the detail of the better one.
    if (known === undefined) byKey.set(key, { ...item, text });
    else
      byKey.set(key, {
        ...(item.priority > known.priority ? { ...item, text } : known),
        priority: Math.max(known.priority, item.priority),
        order: Math.min(known.order, item.order),
      });
  }
  return [...byKey.values()];
}

function arrange(chosen: ReadonlyArray<RankedItem>): StructuredSummary {
  const out: { [F in SummaryField]?: string[] } = {};
  const inOrder = [...chosen].sort((a, b) => a.order - b.order);
  for (const item of inOrder) {
    const list = out[item.field] ?? [];
    list.push(item.text);
    out[item.field] = list;
  }
  return out;
}

/** Items of `previous` first, then those of `next`, without duplicates. */
export function mergeSummaries(previous: StructuredSummary, next: StructuredSummary): StructuredSummary {
  const out: { [F in SummaryField]?: string[] } = {};
  for (const field of SUMMARY_FIELDS) {
    const items = [...new Set([...(previous[field] ?? []), ...(next[field] ?? [])].map(normalizeItem))];
    const kept = items.filter((item) => item !== "");
    if (kept.length > 0) out[field] = kept;
  }
  return out;
}
