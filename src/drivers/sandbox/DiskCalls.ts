/**
 * What the sandbox driver does with machines' disks (Disk.ts holds the images): create, destroy,
 * a frozen copy for a fork, and the freeze and thaw around it (Freezer.ts).
 */
import { Effect } from "effect"
import type { SizeTable } from "../../kernel/config/MachineSizes.js"
import { type MachineDriverShape, withKnownImage } from "../MachineDriver.js"
import { attempt, destroyWith, ensureDisk, freezeWith, type MachinePaths, thawWith } from "../MachineFiles.js"
import * as Disk from "./Disk.js"
import * as Freezer from "./Freezer.js"
import type { RunRecords } from "./RunRecord.js"
import * as UidRanges from "./UidRanges.js"

export interface DiskContext {
  readonly dataDir: string
  readonly sizes: SizeTable
  readonly paths: (id: string) => MachinePaths
  readonly records: RunRecords
  readonly stop: MachineDriverShape["stop"]
}

export const diskCalls = (context: DiskContext) => {
  const { paths, sizes, stop } = context
  const { processesOf, running } = context.records
  /**
   * Pauses the whole machine through its cgroup freezer (nested pid namespaces too: Freezer.ts);
   * a boot without one (no cgroups here, or booted by an older svc) by SIGSTOP to every process of
   * its pid namespace but pid 1 (bubblewrap's init, which writes nothing).
   */
  const freeze = (id: string) =>
    Effect.suspend(() => {
      const freezer = Freezer.freezerOf(running(id)?.groups)
      return freezer === undefined ? signalFreeze(id) : Freezer.freeze(freezer)
    })
  const signalFreeze = freezeWith((id) => {
    const record = running(id)
    return record === undefined ? [] : processesOf(record).filter((pid) => pid !== record.pid)
  })
  /** Resumes the machine, and its file system if a copy killed meanwhile left it frozen. */
  const thaw = (id: string) =>
    Effect.suspend(() => {
      const freezer = Freezer.freezerOf(running(id)?.groups)
      return Effect.zipRight(
        Disk.thawFileSystem(paths(id)),
        freezer === undefined ? signalThaw(id) : Freezer.thaw(freezer)
      )
    })
  const signalThaw = thawWith((id) => {
    const record = running(id)
    return record === undefined ? [] : processesOf(record)
  })

  const calls: Required<Pick<MachineDriverShape, "create" | "destroy" | "diskPath" | "freeze" | "thaw" | "copyDisk">> =
    {
      create: (spec) =>
        withKnownImage(
          spec,
          Effect.suspend(() =>
            // A machine from before disk images keeps its folder while it runs; its next start moves it.
            !Disk.hasImage(paths(spec.id)) && running(spec.id) !== undefined
              ? attempt("create", () => ensureDisk(paths(spec.id)))
              : Disk.ensure(context.dataDir, paths(spec.id), sizes[spec.size].disk_mib)
          )
        ),
      // The disk is unmounted (its loop device freed) before its folder goes.
      destroy: (id) =>
        Effect.tap(
          destroyWith(context.dataDir, (id, how) => Effect.zipRight(stop(id, how), Disk.unmount(paths(id))))(id),
          () => attempt("destroy", () => UidRanges.release(context.dataDir, id))
        ),
      diskPath: (id) => paths(id).disk,
      freeze,
      thaw,
      copyDisk: (sourceId, targetId) =>
        Effect.suspend(() => {
          const source = paths(sourceId)
          // A machine from before disk images, still running: its tree is copied by the caller.
          if (!Disk.hasImage(source)) return Effect.succeed(undefined)
          const copy = Disk.copyImage(source, Disk.imageOf(paths(targetId)))
          return running(sourceId) === undefined
            ? copy
            : Effect.acquireUseRelease(freeze(sourceId), () => copy, () => Effect.ignore(thaw(sourceId)))
        })
    }

  /** A fork that svc's end cut short leaves its source frozen: thawed at start. */
  const thawFrozen = (ids: ReadonlyArray<string>) =>
    Effect.forEach(ids, (id) => {
      const freezer = Freezer.freezerOf(running(id)?.groups)
      return freezer === undefined ? Effect.void : Effect.ignore(Freezer.thaw(freezer))
    }, { discard: true })

  return { ...calls, thawFrozen }
}
