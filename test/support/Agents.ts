/**
 * The real command-line agents for the tests: installed once into a cache folder outside the
 * repository (`$SVC_TEST_AGENTS_DIR`, default `$HOME/.cache/svc-test-agents`) with the same code as
 * `svc agents install`, and reused across runs. Test files running at once wait on a lock folder.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { ensureInstalled } from "../../src/agents/Tools.js"

export const testAgentsDir = process.env.SVC_TEST_AGENTS_DIR ??
  NodePath.join(NodeOs.homedir(), ".cache", "svc-test-agents")

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Installs the agents unless they are there at this build's versions; answers the folder. */
export const installTestAgents = async (): Promise<string> => {
  NodeFs.mkdirSync(NodePath.dirname(testAgentsDir), { recursive: true })
  const lock = `${testAgentsDir}.lock`
  const deadline = Date.now() + 10 * 60_000
  while (true) {
    try {
      NodeFs.mkdirSync(lock)
      break
    } catch {
      // Another test file is installing; a lock older than the deadline is left over from a crash.
      const age = Date.now() - (NodeFs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now())
      if (age > 10 * 60_000) NodeFs.rmSync(lock, { recursive: true, force: true })
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`)
      await sleep(500)
    }
  }
  try {
    ensureInstalled(testAgentsDir, (line) => process.stderr.write(`agents: ${line}\n`))
  } finally {
    NodeFs.rmSync(lock, { recursive: true, force: true })
  }
  return testAgentsDir
}
