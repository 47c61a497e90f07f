import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // SVC_TEST_DATABASE=postgres: the suite's PostgreSQL server (test/support/globalPostgres.ts).
    globalSetup: ["test/support/globalPostgres.ts"],
    // Generous: CI is a shared 2-core box where real machines, servers and Chromium start slowly;
    // a hung test still fails, only later. No test asserts a speed (bench/ measures those).
    testTimeout: 90_000,
    hookTimeout: 90_000
  }
})
