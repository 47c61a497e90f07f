import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { MachineSize, MachineState } from "../kernel/domain/MachineStates.js"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface MachineRow {
  readonly id: string
  readonly organization_id: string
  readonly created_by: string
  readonly name: string
  readonly state: MachineState
  readonly projected_state: MachineState
  readonly size: MachineSize
  readonly image: string
  readonly environment_id: string | null
  readonly environment_version: number | null
  readonly internet_access: number
  readonly auto_stop_seconds: number | null
  readonly idle_sleep_seconds: number | null
  readonly setup_script: string | null
  readonly boot_id: string | null
  readonly last_stop_reason: string | null
  readonly source_kind: string
  readonly source_id: string | null
  readonly created_at: number
  readonly updated_at: number
  readonly started_at: number | null
  readonly stopped_at: number | null
  readonly deleted_at: number | null
  readonly last_activity_at: number | null
  /** The exposed ports, a JSON array of {port, public} (src/kernel/domain/Ports.ts). */
  readonly ports: string
  /** Automatic snapshots (docs/snapshots.md): how many to keep, or null when off. */
  readonly auto_snapshot_keep?: number | null
  /** The host that holds the machine's disk (docs/scale-out.md); null only on rows from before hosts. */
  readonly host_id?: string | null
}

/** A running machine's boot, as the abuse guard samples it. */
export interface RunningBoot {
  readonly id: string
  readonly organization_id: string
  readonly created_by: string
  readonly size: MachineSize
  readonly boot_id: string
}

export type MachinePatch = Partial<Omit<MachineRow, "id" | "organization_id" | "created_by" | "created_at">>

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // What every machine request and every operation runs is prepared (src/kernel/sql/Sqlite.ts).
  const prepared = yield* Prepared
  /** The machine is not among `held` (an open terminal holds idle_sleep off: kernel/IdleHolds.ts). */
  const notHeld = (held: ReadonlyArray<string>) => held.length === 0 ? sql`` : sql`AND NOT ${sql.in("id", held)}`
  return {
    insert: (row: MachineRow) => prepared.insert("machines", row),
    find: (id: string) => prepared.first<MachineRow>("SELECT * FROM machines WHERE id = ?", id),
    /** The organization's machine, or none for an unknown or foreign id. */
    findIn: (organizationId: string, id: string) =>
      prepared.first<MachineRow>("SELECT * FROM machines WHERE id = ? AND organization_id = ?", id, organizationId),
    liveNameTaken: (organizationId: string, name: string, exceptId: string | null) =>
      sql<{ id: string }>`SELECT id FROM machines WHERE organization_id = ${organizationId} AND name = ${name}
        AND state <> 'deleted' AND id <> ${exceptId ?? ""}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    /** A page in creation order; `after` is the last id of the previous page. Deleted ones only when asked. */
    page: (organizationId: string, options: { limit: number; after: string | null; state: string | null }) =>
      sql<MachineRow>`SELECT * FROM machines WHERE organization_id = ${organizationId}
        AND id > ${options.after ?? ""}
        ${options.state === null ? sql`AND state <> 'deleted'` : sql`AND state = ${options.state}`}
        ORDER BY id LIMIT ${options.limit}`.pipe(Effect.orDie),
    update: (id: string, patch: MachinePatch) => prepared.updateById("machines", id, patch),
    /** The host's machines to bring back at start: running ones (timers, adoption). */
    runningOn: (hostId: string) =>
      sql<MachineRow>`SELECT * FROM machines WHERE host_id = ${hostId}
        AND state IN ('running', 'starting', 'restarting')`.pipe(Effect.orDie),
    /** The host that holds the machine, if the machine exists. */
    hostOf: (id: string) =>
      Effect.map(
        prepared.first<{ host_id: string | null }>("SELECT host_id FROM machines WHERE id = ?", id),
        Option.map((row) => row.host_id)
      ),
    /**
     * Gives `hostId` the machines that have no host (rows from before hosts: an upgraded single host
     * keeps its machines). Answers how many.
     */
    /**
     * Gives this host the machines it must drive: rows from before hosts (no host) and, on SQLite,
     * every machine. A SQLite data dir has one node (its lock), so a changed SVC_HOST_ID or
     * hostname (a container recreated) must not leave its machines undriven.
     */
    adopt: (hostId: string) =>
      sql.onDialectOrElse({
        pg: () => prepared.run("UPDATE machines SET host_id = ? WHERE host_id IS NULL", hostId),
        orElse: () =>
          prepared.run("UPDATE machines SET host_id = ? WHERE host_id IS NULL OR host_id <> ?", hostId, hostId)
      }),
    /** Per host, its machines that run or will once accepted operations have run (placement, the host list). */
    runningByHost: sql<{ host_id: string; n: number }>`SELECT host_id, COUNT(*) AS n FROM machines
      WHERE projected_state = 'running' AND host_id IS NOT NULL GROUP BY host_id`.pipe(
      Effect.map((rows) => new Map(rows.map((row) => [row.host_id, Number(row.n)]))),
      Effect.orDie
    ),
    /**
     * The host's running machines with a boot, with only what the abuse guard's sample and the
     * machines' gauges need: both read the host's own driver (a prepared statement over the
     * `machines_running` index: 10,000 rows in a few milliseconds).
     */
    runningBoots: (hostId: string) =>
      prepared.all<RunningBoot>(
        "SELECT id, organization_id, created_by, size, boot_id FROM machines WHERE state = 'running' " +
          "AND boot_id IS NOT NULL AND host_id = ?",
        hostId
      ),
    /** The host's machines that hold a slot of it (src/runtime/HostCapacity.ts). */
    runningIds: (hostId: string) =>
      sql<{ id: string }>`SELECT id FROM machines WHERE host_id = ${hostId}
        AND state IN ('running', 'starting', 'restarting')`.pipe(
        Effect.map((rows) => rows.map((row) => row.id)),
        Effect.orDie
      ),
    /** The organization's machines that are or will be running once their accepted operations have run. */
    headedForRunning: (organizationId: string) =>
      sql<MachineRow>`SELECT * FROM machines WHERE organization_id = ${organizationId}
        AND projected_state = 'running' ORDER BY id`.pipe(Effect.orDie),
    /** How many machines are in each state (for /metrics). */
    /** Name and creator of each of these machines, by id (billing's usage lists ask). */
    namesAndCreators: (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(new Map<string, { readonly name: string; readonly created_by: string }>())
        : sql<{ id: string; name: string; created_by: string }>`SELECT id, name, created_by FROM machines
            WHERE ${sql.in("id", ids)}`.pipe(
          Effect.map((rows) => new Map(rows.map((row) => [row.id, { name: row.name, created_by: row.created_by }]))),
          Effect.orDie
        ),
    /** The organizations with a machine that runs or will once accepted operations have run. */
    organizationsRunning: sql<{ organization_id: string }>`SELECT DISTINCT organization_id FROM machines
      WHERE projected_state = 'running'`.pipe(
      Effect.map((rows) => rows.map((row) => row.organization_id)),
      Effect.orDie
    ),
    /** Live machines that use the environment, with the version each is on (the environments area asks). */
    usingEnvironment: (environmentId: string) =>
      sql<{ id: string; environment_version: number | null }>`SELECT id, environment_version FROM machines
        WHERE environment_id = ${environmentId} AND state <> 'deleted' ORDER BY id`.pipe(Effect.orDie),
    countsByState: sql<{ state: string; n: number }>`SELECT state, COUNT(*) AS n FROM machines GROUP BY state`.pipe(
      Effect.orDie
    ),
    countRunning: (organizationId: string) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM machines WHERE organization_id = ${organizationId}
        AND projected_state = 'running'`.pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), Effect.orDie),
    /**
     * Running machines whose `auto_stop_seconds` or `idle_sleep_seconds` ran out by `now`, with the
     * reason, skipping any with open operations (work in flight is activity; its turn comes first).
     * A machine in `held` (an open terminal: kernel/IdleHolds.ts) is in use: that holds off
     * `idle_sleep`, never `auto_stop`; the terminal's close moves `last_activity_at`.
     */
    dueForStop: (now: number, held: ReadonlyArray<string>) =>
      sql<MachineRow & { reason: "auto_stop" | "idle_sleep" }>`SELECT m.*,
          CASE WHEN m.auto_stop_seconds IS NOT NULL AND m.started_at + m.auto_stop_seconds * 1000 <= ${now}
            THEN 'auto_stop' ELSE 'idle_sleep' END AS reason
        FROM machines m
        WHERE m.state = 'running' AND m.projected_state = 'running'
          AND ((m.auto_stop_seconds IS NOT NULL AND m.started_at + m.auto_stop_seconds * 1000 <= ${now})
            OR (m.idle_sleep_seconds IS NOT NULL
              AND COALESCE(m.last_activity_at, m.started_at) + m.idle_sleep_seconds * 1000 <= ${now}
              ${notHeld(held)}))
          AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.machine_id = m.id
            AND o.status IN ('pending', 'running', 'uncertain'))`.pipe(Effect.orDie),
    /** The earliest time a running machine's stop timer runs out, or null when none has one. */
    nextTimerDue: (held: ReadonlyArray<string>) =>
      sql<{ due: number | null }>`SELECT MIN(due) AS due FROM (
        SELECT started_at + auto_stop_seconds * 1000 AS due FROM machines
          WHERE state = 'running' AND projected_state = 'running' AND auto_stop_seconds IS NOT NULL
        UNION ALL
        SELECT COALESCE(last_activity_at, started_at) + idle_sleep_seconds * 1000 FROM machines
          WHERE state = 'running' AND projected_state = 'running' AND idle_sleep_seconds IS NOT NULL
            ${notHeld(held)}
      ) AS timers`.pipe(Effect.map((rows) => rows[0]?.due ?? null), Effect.orDie),
    /** Per member (creator), the machines that run or will once accepted operations have run: one query. */
    runningByMember: (organizationId: string) =>
      sql<{ created_by: string; n: number }>`SELECT created_by, COUNT(*) AS n FROM machines
        WHERE organization_id = ${organizationId} AND projected_state = 'running' GROUP BY created_by`.pipe(
        Effect.map((rows) => new Map(rows.map((row) => [row.created_by, Number(row.n)]))),
        Effect.orDie
      ),
    /** Machines a member created that run, or will once accepted operations have run. */
    countRunningBy: (organizationId: string, userId: string) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM machines WHERE organization_id = ${organizationId}
        AND created_by = ${userId} AND projected_state = 'running'`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0)),
        Effect.orDie
      )
  }
})

export class MachinesRepo extends Context.Tag("svc/runtime/MachinesRepo")<
  MachinesRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(MachinesRepo, make)
}
