/**
 * The `svc` CLI as a user runs it against a server: a separate process (bin/svc.mjs, the sources
 * through tsx) with its own config folder (`XDG_CONFIG_HOME`), the server's URL and a key in
 * `SVC_URL` / `SVC_API_KEY` unless the test leaves them out. Output is kept as bytes and text.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import { bin } from "./Binary.js"
import { tempDir } from "./TestServer.js"

export interface CliResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stdoutBytes: Buffer
  readonly stderr: string
}

export interface CliOptions {
  /** Written to its stdin, which is then closed (else stdin is empty). */
  readonly input?: string | Buffer
  readonly env?: Record<string, string | undefined>
  /** Called once the process runs (to signal it, for example). */
  readonly started?: (child: NodeChild.ChildProcess) => void
  /** A command that runs node for it, such as `/usr/bin/time -f %M`. */
  readonly wrapper?: ReadonlyArray<string>
}

/** Runs the CLI to its end. */
export const runCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined>,
  options: CliOptions = {}
) =>
  Effect.async<CliResult>((resume) => {
    const merged: Record<string, string> = {}
    for (const [name, value] of Object.entries({ ...process.env, ...env, ...options.env })) {
      if (value !== undefined) merged[name] = value
    }
    const command = [...(options.wrapper ?? []), process.execPath, bin, ...args]
    const child = NodeChild.spawn(command[0]!, command.slice(1), { env: merged, stdio: ["pipe", "pipe", "pipe"] })
    const out: Array<Buffer> = []
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdin.end(options.input ?? "")
    child.on("close", (code, signal) => {
      const stdoutBytes = Buffer.concat(out)
      resume(Effect.succeed({ code, signal, stdout: stdoutBytes.toString("utf8"), stdoutBytes, stderr }))
    })
    options.started?.(child)
  })

/** A CLI bound to a server and key, with a fresh config folder of its own. */
export const cliFor = (url: string, apiKey: string | undefined) =>
  Effect.map(tempDir, (configHome) => {
    const env = { SVC_URL: url, SVC_API_KEY: apiKey, XDG_CONFIG_HOME: configHome, SVC_LOG_LEVEL: "none" }
    return {
      configHome,
      env,
      run: (args: ReadonlyArray<string>, options: CliOptions = {}) => runCli(args, env, options)
    }
  })
