import * as NodeOs from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // SVC_TEST_DATABASE=postgres: the suite's PostgreSQL server (test/support/globalPostgres.ts).
    globalSetup: ["test/support/globalPostgres.ts"],
    // Two test files at a time at least: vitest's default (cores - 1) is one on CI's two cores, and
    // most end-to-end files wait on processes (svc, machines, Chromium) rather than compute, while
    // each file's import (vitest's "collect") is one core's work (docs/development.md "How CI spends
    // its time"; figures in docs/benchmarks.md). `--maxWorkers=1` on the command line runs one.
    maxWorkers: Math.max(2, NodeOs.availableParallelism() - 1),
    // Generous: CI is a shared 2-core box where real machines, servers and Chromium start slowly;
    // a hung test still fails, only later. No test asserts a speed (bench/ measures those).
    testTimeout: 90_000,
    hookTimeout: 90_000
  }
})
