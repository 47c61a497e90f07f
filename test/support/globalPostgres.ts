/**
 * vitest's global set-up: with `SVC_TEST_DATABASE=postgres`, one PostgreSQL server for the whole
 * run (each test makes a database of its own on it: Postgres.ts), stopped when the run ends.
 */
import { startSuiteServer } from "./Postgres.js"

export default function setup() {
  if (process.env.SVC_TEST_DATABASE !== "postgres") return
  const server = startSuiteServer()
  process.env.SVC_TEST_POSTGRES_DIR = server.dir
  return () => server.close()
}
