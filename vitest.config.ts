import { defineConfig } from "vitest/config";

export default defineConfig({
  // The CLI's launcher and its cache-directory helper are CommonJS TypeScript (`.cts`); let them be transformed.
  oxc: { include: /\.(m?ts|cts|[jt]sx)$/ },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
