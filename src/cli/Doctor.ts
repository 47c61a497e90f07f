/**
 * `svc doctor`: what this host lacks to run svc (docs/install.md "Check the host"). The sandbox
 * driver's checks (src/drivers/sandbox/HostCheck.ts), then the listen address; one line each, what
 * to install or change for the failing ones; exit code 1 when a required check fails.
 */
import { Command, Options } from "@effect/cli"
import { Config, Console, Effect } from "effect"
import * as NodeNet from "node:net"
import * as NodePath from "node:path"
import { checkHost, type HostCheck } from "../drivers/sandbox/HostCheck.js"
import { defaultDataDir } from "../kernel/config/AppConfig.js"
import { settingFlag, settingsWithFlags } from "./SettingFlags.js"

/** Whether something may listen on host:port; a probe server is opened and closed at once. */
const portCheck = (host: string, port: number) =>
  Effect.async<HostCheck>((resume) => {
    const name = "listen address"
    const where = `${host}:${port}`
    const server = NodeNet.createServer()
    server.once("error", (error: NodeJS.ErrnoException) => {
      const why = error.code === "EADDRINUSE"
        ? "in use by another process (svc already running? or set SVC_PORT)"
        : error.code === "EACCES"
        ? "a port below 1024 needs root (or set SVC_PORT)"
        : error.message
      resume(Effect.succeed({ name, status: "fail", detail: `${where} ${why}` }))
    })
    server.listen({ host, port, exclusive: true }, () =>
      server.close(() => resume(Effect.succeed({ name, status: "ok", detail: `${where} is free` }))))
  })

const line = (check: HostCheck) =>
  `${({ ok: "ok", warn: "warn", fail: "FAIL" } as const)[check.status].padEnd(5)} ${
    check.name.padEnd(19)
  } ${check.detail}`

export const doctor = Command.make(
  "doctor",
  {
    host: settingFlag("host", "The address svc will listen on (SVC_HOST, default 127.0.0.1)"),
    port: settingFlag("port", "The port svc will listen on (SVC_PORT, default 8080)"),
    dataDir: settingFlag("data-dir", "The data directory to check (SVC_DATA_DIR)"),
    runtime: settingFlag("runtime", "The machine driver: sandbox (the default) or process (SVC_RUNTIME)"),
    json: Options.boolean("json").pipe(Options.withDescription("Print one JSON array of the checks instead of lines"))
  },
  (flags) =>
    Effect.gen(function*() {
      const host = yield* Config.string("SVC_HOST").pipe(Config.withDefault("127.0.0.1"))
      const port = yield* Config.port("SVC_PORT").pipe(Config.withDefault(8080))
      const dataDir = NodePath.resolve(yield* Config.string("SVC_DATA_DIR").pipe(Config.withDefault(defaultDataDir())))
      const runtime = yield* Config.literal("sandbox", "docker", "process")("SVC_RUNTIME").pipe(
        Config.withDefault("sandbox")
      )
      const checks = [...checkHost({ dataDir, isolated: runtime === "sandbox" }), yield* portCheck(host, port)]
      const failed = checks.filter((check) => check.status === "fail")
      if (flags.json) {
        yield* Console.log(JSON.stringify(checks))
      } else {
        for (const check of checks) yield* Console.log(line(check))
        yield* Console.log(
          failed.length === 0
            ? `svc doctor: this host can run svc (SVC_RUNTIME=${runtime}); next: svc serve`
            : `svc doctor: ${failed.length} required check${failed.length === 1 ? "" : "s"} failed (FAIL above)`
        )
      }
      if (failed.length > 0) process.exitCode = 1
    }).pipe(
      Effect.withConfigProvider(settingsWithFlags({
        SVC_HOST: flags.host,
        SVC_PORT: flags.port,
        SVC_DATA_DIR: flags.dataDir,
        SVC_RUNTIME: flags.runtime
      }))
    )
).pipe(Command.withDescription("Check that this host has what svc needs, and say what to install"))
