/**
 * The retention of deleted organizations: `SVC_DELETED_ORG_RETENTION_DAYS` (30) after a deletion,
 * its machines are deleted with their disks and snapshots, and its templates too. Checked every hour
 * on the Clock; each pass asks for what is still there, so a crash or a refusal (a snapshot still
 * pending) only delays the rest to the next pass. The organization is marked purged once nothing is
 * left. One node at a time does it (Singletons.ts).
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig, defaultDeletedOrganizationRetentionDays } from "../kernel/config/AppConfig.js"
import { Singletons } from "../kernel/sql/Singletons.js"
import { Machines } from "../machines/Machines.js"
import { Snapshots } from "../snapshots/Snapshots.js"
import { OrganizationsRepo } from "./Repo.js"

export const purgeInterval = Duration.hours(1)

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const repo = yield* OrganizationsRepo
  const machines = yield* Machines
  const snapshots = yield* Snapshots
  const retentionMillis = (config.deletedOrganizationRetentionDays ?? defaultDeletedOrganizationRetentionDays) *
    24 * 3600_000

  /** Deletes one more page of what the organization holds; answers whether anything was left. */
  const purgeSome = (organizationId: string) =>
    Effect.gen(function*() {
      const templates = yield* snapshots.templatesPage(organizationId, { limit: 100, after: null })
      yield* Effect.forEach(templates, (template) =>
        Effect.ignore(snapshots.deleteTemplate(organizationId, template.id)), {
        discard: true
      })
      const live = (yield* machines.page(organizationId, 100, null, null)).items.filter((m) =>
        m.state !== "deleted"
      )
      yield* Effect.forEach(live, (machine) =>
        Effect.ignore(Effect.zipRight(
          snapshots.deleteForMachine(organizationId, machine.id, null),
          machines.change(
            {
              organizationId,
              userId: machine.created_by,
              idempotencyKey: `organization_deleted:purge:${machine.id}`,
              system: "organization_deleted"
            },
            machine.id,
            "delete",
            {}
          )
        )), { discard: true })
      return templates.length > 0 || live.length > 0
    })

  /** One pass over the organizations whose retention ended. */
  const pass = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (const organizationId of yield* repo.unpurgedDeletedBefore(now - retentionMillis)) {
      if (!(yield* purgeSome(organizationId))) yield* repo.markPurged(organizationId, now)
    }
  })

  return { pass }
})

/** Runs a pass at the start and every hour, for the layer's lifetime. */
export const layer = Layer.scopedDiscard(
  Effect.gen(function*() {
    const { pass } = yield* make
    const singletons = yield* Singletons
    yield* Effect.forkScoped(singletons.run(
      "deleted organizations' purge",
      pass.pipe(
        Effect.catchAllCause((cause) => Effect.logError("purging deleted organizations", cause)),
        Effect.repeat(Schedule.spaced(purgeInterval))
      )
    ))
  })
)
