/**
 * Exec in a running sandbox (SandboxDriver.ts): through the machine's launcher
 * (src/drivers/launcher) when the host has Perl under /usr, else each command enters the machine
 * with nsenter.
 */
import { Effect } from "effect"
import * as NodePath from "node:path"
import { wrapOnce } from "../ExactlyOnce.js"
import { runCommand, waitFor } from "../HostProcess.js"
import { type Launcher, spawnLauncher } from "../launcher/Launcher.js"
import { launcherScript } from "../launcher/Script.js"
import {
  DriverError,
  type ExecRequest,
  impossibleExec,
  type MachineDriverShape,
  NotRunning,
  type OutputStream
} from "../MachineDriver.js"
import { cpuCredit, type MachinePaths } from "../MachineFiles.js"
import { machineHome, machinePath } from "./Bwrap.js"
import * as Cgroups from "./Cgroups.js"
import { seccompHex } from "./Isolation.js"
import type { RunRecord } from "./RunRecord.js"
import type { Tools } from "./Tools.js"

/** A terminal's PTY is made by the launcher: a host without Perl under /usr has none. */
const noTerminals = (id: string) =>
  new DriverError({
    message: `terminal in machine ${id}: terminals need the launcher (Perl under /usr on the host)`,
    permanent: "terminal_unavailable"
  })

/** How long an exec whose launcher ended waits to see whether that was its machine stopping. */
const launcherGraceMs = 1_000

export interface ExecContext {
  readonly tools: Tools
  readonly isolated: boolean | undefined
  readonly paths: (id: string) => MachinePaths
  readonly running: (id: string) => RunRecord | undefined
}

/** The driver's `exec`, and `forget` for a machine that stops (its launcher ends with it). */
export const execIn = (context: ExecContext) => {
  const { paths, running, tools } = context
  /** The launcher of each running machine this driver has run a command in, with its boot. */
  const launchers = new Map<string, { readonly bootId: string; readonly launcher: Launcher }>()

  /**
   * The machine's launcher (src/drivers/launcher), started on its first exec of a boot: entered
   * like a command (in the machine's cgroups first, where it has them), so what it forks is inside.
   */
  const launcherOf = (id: string, record: RunRecord, perl: string) => {
    const known = launchers.get(id)
    if (known !== undefined && known.bootId === record.bootId && known.launcher.alive()) return known.launcher
    known?.launcher.close()
    const enter = [
      tools.nsenter,
      `--target=${record.pid}`,
      "--all",
      "--root",
      "--wdns=/",
      "--",
      perl,
      "-e",
      launcherScript,
      ...(context.isolated === true ? [seccompHex] : [])
    ]
    const launcher = spawnLauncher(
      record.groups === undefined ? enter : Cgroups.joinThen(record.groups, enter),
      NodePath.join(paths(id).machine, "launcher.log"),
      { PATH: machinePath }
    )
    launchers.set(id, { bootId: record.bootId, launcher })
    return launcher
  }

  /** Exec without a launcher: each command enters the machine with nsenter (and a cgroup-joining shell). */
  const enterAndRun = (
    id: string,
    record: RunRecord,
    request: ExecRequest & { readonly cwd: string; readonly env: Readonly<Record<string, string>> },
    onOutput: (stream: OutputStream, chunk: Uint8Array) => Effect.Effect<void>,
    stoppedMeanwhile: () => boolean
  ) => {
    const enter = [
      tools.nsenter,
      `--target=${record.pid}`,
      "--all",
      "--root",
      `--wdns=${request.cwd}`,
      "--",
      ...wrapOnce(request.argv, request.once)
    ]
    return runCommand(
      // With cgroups, a small shell joins the machine's groups first and then becomes nsenter,
      // so the command and everything it forks is counted and limited (about 0.5 ms more).
      record.groups === undefined ? enter : Cgroups.joinThen(record.groups, enter),
      {
        cwd: "/",
        env: request.env,
        stdin: request.stdin,
        input: request.input,
        onExit: record.cgroupCpuAtBoot === undefined ? (seconds) => cpuCredit(paths(id).cpu, seconds) : undefined
      },
      onOutput
    ).pipe(
      // nsenter answers 1 when the sandbox vanished under it: that is the machine stopping.
      Effect.flatMap((exit) =>
        exit.exitCode !== 0 && stoppedMeanwhile()
          ? Effect.fail(new NotRunning({ machineId: id }))
          : Effect.succeed(exit)
      )
    )
  }

  const exec: MachineDriverShape["exec"] = (id, request, onOutput) =>
    Effect.suspend((): Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning> => {
      const impossible = impossibleExec(request, id)
      if (impossible !== undefined) return Effect.fail(impossible)
      const record = running(id)
      if (record === undefined) return Effect.fail(new NotRunning({ machineId: id }))
      const cwd = NodePath.posix.resolve(machineHome, request.cwd ?? ".")
      const env = { PATH: machinePath, HOME: machineHome, ...record.env, ...request.env }
      // A command that ends with a failure of the way in (nsenter's 1, the launcher's end) while
      // the machine is gone ended because the machine stopped.
      const stoppedMeanwhile = () => running(id) === undefined
      if (tools.perl === undefined) {
        if (request.terminal !== undefined) return Effect.fail(noTerminals(id))
        return enterAndRun(id, record, { ...request, cwd, env }, onOutput, stoppedMeanwhile)
      }
      return launcherOf(id, record, tools.perl).run({ ...request, cwd, env }, onOutput).pipe(
        Effect.catchTag("LauncherGone", (gone) =>
          // A stop kills the launcher a moment before the machine's pid 1 is gone.
          Effect.flatMap(
            waitFor(stoppedMeanwhile, launcherGraceMs),
            (stopped): Effect.Effect<never, DriverError | NotRunning> =>
              stopped
                ? Effect.fail(new NotRunning({ machineId: id }))
                : Effect.fail(new DriverError({ message: `exec in machine ${id}: ${gone.reason}` }))
          ))
      )
    })

  return { exec, forget: (id: string) => void launchers.delete(id) }
}
