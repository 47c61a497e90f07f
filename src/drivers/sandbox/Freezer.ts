/**
 * Pausing every process of a machine through its cgroup's freezer (v1 `freezer.state`, v2
 * `cgroup.freeze`): unlike signals to the processes of its pid namespace, it also holds processes
 * of nested pid namespaces (containers in a machine) and ones forked meanwhile, and a machine's
 * process cannot undo it (SIGCONT does not thaw a frozen task).
 */
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { realSleep } from "../HostProcess.js"
import { DriverError } from "../MachineDriver.js"
import type { Groups } from "./Cgroups.js"

export interface Freezer {
  readonly version: 1 | 2
  readonly dir: string
}

/** The freezer among a machine's groups, or undefined (a boot without one: signals then). */
export const freezerOf = (groups: Groups | undefined): Freezer | undefined => {
  for (const dir of groups ?? []) {
    if (NodeFs.existsSync(NodePath.join(dir, "freezer.state"))) return { version: 1, dir }
    if (NodeFs.existsSync(NodePath.join(dir, "cgroup.freeze"))) return { version: 2, dir }
  }
  return undefined
}

const set = (freezer: Freezer, frozen: boolean) =>
  freezer.version === 1
    ? NodeFs.writeFileSync(NodePath.join(freezer.dir, "freezer.state"), frozen ? "FROZEN" : "THAWED")
    : NodeFs.writeFileSync(NodePath.join(freezer.dir, "cgroup.freeze"), frozen ? "1" : "0")

const isFrozen = (freezer: Freezer) =>
  freezer.version === 1
    ? NodeFs.readFileSync(NodePath.join(freezer.dir, "freezer.state"), "utf8").trim() === "FROZEN"
    : /^frozen 1$/m.test(NodeFs.readFileSync(NodePath.join(freezer.dir, "cgroup.events"), "utf8"))

/**
 * Freezes the group and waits until every task in it (its sub-groups too) is frozen. A v1 group
 * can stay FREEZING when a task is caught between two states: as runc does, it is thawed for a
 * moment and frozen again, in rounds, until FROZEN (about 10 s at most, then it fails thawed).
 */
export const freeze = (freezer: Freezer) =>
  Effect.gen(function*() {
    for (let round = 0; round < 50; round++) {
      yield* attempt(() => set(freezer, true))
      for (let poll = 0; poll < 40; poll++) {
        if (yield* attempt(() => isFrozen(freezer))) return
        yield* realSleep(poll < 10 ? 1 : 5)
      }
      yield* attempt(() => set(freezer, false))
      yield* realSleep(10)
    }
    return yield* new DriverError({ message: `freeze: the group ${freezer.dir} did not freeze` })
  })

export const thaw = (freezer: Freezer) => attempt(() => set(freezer, false))

const attempt = <A>(run: () => A) =>
  Effect.try({ try: run, catch: (cause) => new DriverError({ message: `freezer: ${String(cause)}`, cause }) })
