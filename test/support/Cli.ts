/**
 * The `svc` CLI as a user runs it against a server: a separate process (this checkout's bundle,
 * test/support/CheckoutBundle.ts) with its own config folder (`XDG_CONFIG_HOME`), the server's URL and a key in
 * `SVC_URL` / `SVC_API_KEY` unless the test leaves them out. Output is kept as bytes and text.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import { cliScript } from "./CheckoutBundle.js"
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
    const command = [...(options.wrapper ?? []), process.execPath, cliScript(), ...args]
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

/**
 * A loopback server in front of `upstream`: `intercept` answers a request itself (calling `reply`)
 * or returns false to have it forwarded unchanged. For what the real server cannot be made to do on
 * cue: a 503 before it acts, routes another branch builds.
 */
export const frontServer = (
  upstream: string,
  intercept: (
    request: NodeHttp.IncomingMessage,
    body: Buffer,
    reply: (status: number, value: unknown, headers?: Record<string, string>) => void
  ) => void | false
) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; server: NodeHttp.Server }>((resume) => {
      const server = NodeHttp.createServer(async (request, response) => {
        const chunks: Array<Buffer> = []
        for await (const chunk of request) chunks.push(chunk as Buffer)
        const body = Buffer.concat(chunks)
        const reply = (status: number, value: unknown, headers: Record<string, string> = {}) => {
          response.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers })
          response.end(JSON.stringify(value))
        }
        if (intercept(request, body, reply) !== false) return
        const forwarded = await fetch(upstream + request.url, {
          method: request.method!,
          headers: Object.fromEntries(
            Object.entries(request.headers).filter(([name]) => name !== "host" && name !== "content-length")
          ) as Record<string, string>,
          ...(body.length > 0 ? { body } : {})
        })
        const headers = Object.fromEntries(forwarded.headers)
        delete headers["content-encoding"]
        delete headers["content-length"]
        response.writeHead(forwarded.status, headers)
        response.end(Buffer.from(await forwarded.arrayBuffer()))
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as NodeNet.AddressInfo).port}`, server })))
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.close(() =>
          resume(Effect.void)
        )
      })
  )
