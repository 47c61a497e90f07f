/**
 * `svc admin install-systemd`: svc as a system service. Writes the unit and its environment file,
 * creates the `svc` system group that may read the data dir and the settings, and says what to run
 * next. `--print` only prints the unit. Why each line is there: docs/install.md.
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { makeFolders } from "../kernel/Folders.js"

export interface UnitSettings {
  readonly bin: string
  readonly dataDir: string
  readonly environmentFile: string
}

/** The unit file's text. */
export const unitText = (settings: UnitSettings) =>
  `[Unit]
Description=svc: isolated machines and coding agents for organizations
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=${settings.bin} serve
EnvironmentFile=${settings.environmentFile}
Environment=MALLOC_ARENA_MAX=2
# Root: sandboxes need it (bwrap refuses ambient capabilities without setuid, and machines' network
# namespaces need CAP_SYS_ADMIN in the host's user namespace). The group may read the data dir.
User=root
Group=svc
UMask=0027
# On SIGTERM svc stops accepting, finishes its answers, flushes and exits; the machines keep running
# (KillMode=process signals svc alone) and the next start adopts them.
KillMode=process
KillSignal=SIGTERM
TimeoutStopSec=30s
Restart=on-failure
RestartSec=2s
LimitNOFILE=1048576
ProtectSystem=full
ProtectHome=read-only
ReadWritePaths=${settings.dataDir}
# The single executable's SQLite addon is written here ($CACHE_DIRECTORY), else under the data dir.
CacheDirectory=svc

[Install]
WantedBy=multi-user.target
`

const environmentText = (dataDir: string, port: string, baseUrl: Option.Option<string>) =>
  [
    "# svc's settings (docs/configuration.md); read by svc.service.",
    `SVC_DATA_DIR=${dataDir}`,
    "SVC_HOST=127.0.0.1",
    `SVC_PORT=${port}`,
    ...Option.match(baseUrl, { onNone: () => [], onSome: (url) => [`SVC_BASE_URL=${url}`] }),
    "SVC_RUNTIME=sandbox",
    ""
  ].join("\n")

const run = (command: string, args: ReadonlyArray<string>) => NodeChild.spawnSync(command, args, { stdio: "ignore" })

export const installSystemd = Command.make(
  "install-systemd",
  {
    bin: Options.text("bin").pipe(
      Options.withDefault(process.execPath.endsWith("/node") ? "/usr/local/bin/svc" : process.execPath),
      Options.withDescription("The svc the unit runs")
    ),
    dataDir: Options.text("data-dir").pipe(
      Options.withDefault("/var/lib/svc"),
      Options.withDescription("The data directory")
    ),
    port: Options.text("port").pipe(Options.withDefault("8080"), Options.withDescription("The port svc listens on")),
    baseUrl: Options.text("base-url").pipe(
      Options.optional,
      Options.withDescription("The public address of the API (SVC_BASE_URL)")
    ),
    unitDir: Options.text("unit-dir").pipe(
      Options.withDefault("/etc/systemd/system"),
      Options.withDescription("Where the unit file is written")
    ),
    configDir: Options.text("config-dir").pipe(
      Options.withDefault("/etc/svc"),
      Options.withDescription("Where svc.env (the settings) is written")
    ),
    print: Options.boolean("print").pipe(Options.withDescription("Print the unit and change nothing"))
  },
  (options) =>
    Effect.gen(function*() {
      const environmentFile = NodePath.join(options.configDir, "svc.env")
      const unit = unitText({ bin: options.bin, dataDir: options.dataDir, environmentFile })
      if (options.print) return yield* Console.log(unit)
      if (run("getent", ["group", "svc"]).status !== 0 && run("groupadd", ["--system", "svc"]).status !== 0) {
        return yield* Effect.fail("svc: could not create the system group svc (run as root)")
      }
      makeFolders(options.dataDir, 0o750)
      makeFolders(options.configDir, 0o750)
      run("chgrp", ["svc", options.dataDir, options.configDir])
      if (!NodeFs.existsSync(environmentFile)) {
        NodeFs.writeFileSync(environmentFile, environmentText(options.dataDir, options.port, options.baseUrl), {
          mode: 0o640
        })
        run("chgrp", ["svc", environmentFile])
      }
      const unitFile = NodePath.join(options.unitDir, "svc.service")
      makeFolders(options.unitDir)
      NodeFs.writeFileSync(unitFile, unit)
      yield* Console.log(
        `wrote ${unitFile} and ${environmentFile}\nnext: systemctl daemon-reload && systemctl enable --now svc`
      )
    }).pipe(
      Effect.catchAll((error) =>
        Effect.sync(() => {
          process.stderr.write(`${String(error)}\n`)
          process.exit(1)
        })
      )
    )
).pipe(Command.withDescription("Install svc as a systemd service (unit, settings file, group); --print shows the unit"))
