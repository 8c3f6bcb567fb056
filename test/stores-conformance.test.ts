// One conformance suite for every store backend (memory, SQLite, PostgreSQL): each test's name starts with its
// backend. PostgreSQL runs on a throwaway cluster made with initdb; without server binaries those tests are
// skipped with a message locally and fail in CI (CI=true).
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import { artifactCases, summaryCases } from "./support/store-cases-artifacts.js";
import { callCases, durabilityCases } from "./support/store-cases-calls.js";
import { checkpointCases } from "./support/store-cases-checkpoints.js";
import { idCases } from "./support/store-cases-ids.js";
import { logCases } from "./support/store-cases-log.js";
import { planCases } from "./support/store-cases-plan.js";
import { planLogCases } from "./support/store-cases-plan-log.js";
import { planLogPropertyCases } from "./support/store-cases-plan-log-property.js";
import { processCases } from "./support/store-cases-processes.js";
import { searchCases } from "./support/store-cases-search.js";
import { tenancyCases } from "./support/store-cases-tenancy.js";

for (const backend of STORE_BACKENDS) {
  const title = (text: string) => `[${backend.name}] ${text}`;
  const reason = backend.unavailable();
  if (reason !== undefined && process.env.CI === "true") {
    describe(`stores [${backend.name}]`, () => {
      it(title("backend is available (required when CI=true)"), () => {
        throw new Error(reason);
      });
    });
    continue;
  }
  if (reason !== undefined) {
    console.warn(`skipping the ${backend.name} store conformance tests: ${reason}`);
    describe.skip(`stores [${backend.name}] (skipped: ${reason})`, () => {
      it(title("conformance suite"), () => {});
    });
    continue;
  }

  describe(`stores [${backend.name}]`, () => {
    const opener = new StoreOpener(backend);
    beforeAll(() => backend.start());
    afterEach(() => opener.closeAll());
    afterAll(async () => {
      await opener.closeAll();
      await backend.stop();
    });

    describe("log", () => logCases(opener, title));
    describe("log search", () => searchCases(backend, opener, title));
    describe("plans", () => planCases(opener, title));
    describe("plans against the log", () => {
      planLogCases(opener, title);
      planLogPropertyCases(opener, title);
    });
    describe("ids", () => idCases(opener, title));
    describe("artifacts", () => artifactCases(opener, title));
    describe("summaries", () => summaryCases(backend, opener, title));
    describe("model calls", () => callCases(opener, title));
    describe("checkpoints", () => checkpointCases(opener, title));
    describe("tenancy", () => tenancyCases(opener, title));
    describe("durability", () => durabilityCases(backend, opener, title));
    describe("concurrency and crashes", () => processCases(backend, opener, title));
  });
}
