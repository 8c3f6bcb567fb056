// `context-ledger/extend`: building blocks for people who write their own strategies, stores or audit tools.
// They expose how the library works inside (resolution tables, salience scoring, hashes, checkpoint records),
// so they may change between minor versions more readily than the main entry point's API.

// One-at-a-time work per thread within a process, as the engine queues its own operations (the wings queue theirs).
export { ThreadLocks } from "./engine/engine-core.js";
// Loading optional peer dependencies, for wings of your own (a missing one fails with MissingDependencyError).
export { importPeer, isMissingPackage, requirePeer } from "./errors/optional-peer.js";
export { canonicalJson, hashMessageContent, sha256Hex } from "./log/canonical-json.js";
export type { SeqResolution } from "./plan/resolve-for-log.js";
export { decisionAt, resolveForLog } from "./plan/resolve-for-log.js";
export { hashRendered } from "./render/prompt-hash.js";
export type { CheckpointStore, ThreadCheckpoint } from "./stores/checkpoint-store.js";
export { CHECKPOINTS_KEPT } from "./stores/checkpoint-store.js";
export type { SearchArguments } from "./stores/log-search.js";
export {
  checkSearchArguments,
  SEARCH_MAX_TERMS,
  SEARCH_TEXT_MAX_CHARS,
  searchTerms,
  searchTextOf,
  searchWords,
} from "./stores/log-search.js";
export { SearchIndex } from "./stores/memory/memory-search-index.js";
export type { DecisionChange, SweepState } from "./strategies/group-sweep.js";
export { GroupSweep } from "./strategies/group-sweep.js";
export { protectedGroups } from "./strategies/hard-fallback.js";
export type { Rarity, SalientLineOptions } from "./strategies/salient-lines.js";
export { rarityOf, salientLines, wordsOf } from "./strategies/salient-lines.js";
export { memosOf } from "./strategies/strategy-memo.js";
