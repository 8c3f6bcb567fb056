// `context-ledger/sample`: seeded, synthetic agent sessions for demos, examples and load tests.

export type { SampleSessionOptions } from "./sample-session.js";
export { generateSampleSession } from "./sample-session.js";
export { SeededRandom } from "./seeded-random.js";
