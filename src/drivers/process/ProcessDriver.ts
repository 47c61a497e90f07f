/**
 * The `process` driver: a machine is a folder on the host and its commands are plain child
 * processes of svc. It isolates nothing (a command sees the whole host as the user svc runs as);
 * it exists for development on hosts without bubblewrap, and says so when it starts.
 *
 * Layout: `<data dir>/machines/<id>/disk/{home,workspace,tmp}`; `run.json` while the machine runs
 * ({bootId, hostBootId}); `cpu.json` with the CPU seconds of earlier boots. Every process of a
 * machine carries `SVC_MACHINE_ID` in its environment, which is how stop finds and ends them all,
 * background processes included, even after svc restarted.
 */
import { Effect, Layer } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { allPids, hostBootId, killPid, procStat, readJson, runCommand, writeAtomic } from "../HostProcess.js"
import { DriverError, MachineDriver, type MachineDriverShape, NotRunning } from "../MachineDriver.js"

interface RunRecord {
  readonly bootId: string
  readonly hostBootId: string
  readonly env: Readonly<Record<string, string>>
}

const folders = ["home", "workspace", "tmp"] as const

const attempt = <A>(what: string, run: () => A) =>
  Effect.try({ try: run, catch: (cause) => new DriverError({ message: `${what}: ${String(cause)}`, cause }) })

export const make = (options: { readonly dataDir: string }): MachineDriverShape => {
  const machineDir = (id: string) => NodePath.join(options.dataDir, "machines", id)
  const diskDir = (id: string) => NodePath.join(machineDir(id), "disk")
  const runFile = (id: string) => NodePath.join(machineDir(id), "run.json")
  const cpuFile = (id: string) => NodePath.join(machineDir(id), "cpu.json")

  /** The run record of a machine running in this host boot, if any. */
  const running = (id: string) => {
    const record = readJson<RunRecord>(runFile(id))
    return record !== undefined && record.hostBootId === hostBootId() ? record : undefined
  }

  const marker = (id: string) => `SVC_MACHINE_ID=${id}\0`

  /** Host processes that belong to the machine (found by the variable every one inherits). */
  const processesOf = (id: string) =>
    allPids().filter((pid) => {
      try {
        return NodeFs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(marker(id))
      } catch {
        return false
      }
    })

  const liveCpu = (id: string) => processesOf(id).reduce((sum, pid) => sum + (procStat(pid)?.cpuSeconds ?? 0), 0)
  const earlierCpu = (id: string) => readJson<{ seconds: number }>(cpuFile(id))?.seconds ?? 0

  const stop: MachineDriverShape["stop"] = (id, { force }) =>
    attempt("stop", () => {
      writeAtomic(cpuFile(id), JSON.stringify({ seconds: earlierCpu(id) + liveCpu(id) }))
      for (const pid of processesOf(id)) killPid(pid, force ? "SIGKILL" : "SIGTERM")
    }).pipe(
      Effect.zipRight(Effect.gen(function*() {
        // Polite first: up to 5 s for SIGTERM, then SIGKILL whatever is left.
        for (let waited = 0; !force && waited < 5000 && processesOf(id).length > 0; waited += 50) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
        }
        for (const pid of processesOf(id)) killPid(pid, "SIGKILL")
      })),
      Effect.zipRight(attempt("stop", () => NodeFs.rmSync(runFile(id), { force: true })))
    )

  return {
    name: "process",
    isolates: false,
    create: (spec) =>
      attempt("create", () => {
        for (const folder of folders) NodeFs.mkdirSync(NodePath.join(diskDir(spec.id), folder), { recursive: true })
      }),
    start: (spec) =>
      attempt("start", () => {
        const current = running(spec.id)
        if (current !== undefined) return { bootId: current.bootId }
        if (!NodeFs.existsSync(diskDir(spec.id))) throw new Error(`machine ${spec.id} has no disk`)
        const record: RunRecord = { bootId: NodeCrypto.randomUUID(), hostBootId: hostBootId(), env: spec.env }
        writeAtomic(runFile(spec.id), JSON.stringify(record))
        return { bootId: record.bootId }
      }),
    stop,
    destroy: (id) =>
      Effect.zipRight(stop(id, { force: true }), attempt("destroy", () => NodeFs.rmSync(machineDir(id), { recursive: true, force: true }))),
    observe: (id) =>
      attempt("observe", () => {
        const record = running(id)
        return { exists: NodeFs.existsSync(diskDir(id)), running: record !== undefined, bootId: record?.bootId ?? null }
      }),
    exec: (id, request, onOutput) =>
      Effect.suspend((): Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning> => {
        const record = running(id)
        if (record === undefined) return Effect.fail(new NotRunning({ machineId: id }))
        const home = NodePath.join(diskDir(id), "home")
        return runCommand(request.argv, {
          cwd: NodePath.resolve(home, request.cwd ?? "."),
          env: {
            PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
            HOME: home,
            TMPDIR: NodePath.join(diskDir(id), "tmp"),
            ...record.env,
            ...request.env,
            SVC_MACHINE_ID: id
          },
          stdin: request.stdin
        }, onOutput)
      }),
    cpuSeconds: (id) => attempt("cpu", () => earlierCpu(id) + liveCpu(id))
  }
}

export const layer = (options: { readonly dataDir: string }) =>
  Layer.effect(
    MachineDriver,
    Effect.as(
      Effect.logWarning("SVC_RUNTIME=process: machines are plain host processes; nothing is isolated"),
      make(options)
    )
  )
