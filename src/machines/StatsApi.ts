/** GET /v1/machines/{id}/stats: a machine's use against its size's limits (docs/observability.md). */
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { MachineSize, MachineState } from "../kernel/domain/MachineStates.js"
import { NullableTimestamp, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { liveHostErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"

const Bytes = Schema.Int.pipe(Schema.nonNegative())

export const MachineStatsDto = Schema.Struct({
  machine_id: Uuid,
  state: MachineState,
  size: MachineSize,
  /** The boot the figures are of; null when the machine does not run. */
  boot_id: Schema.NullOr(Uuid),
  started_at: NullableTimestamp,
  read_at: Timestamp,
  cpu: Schema.Struct({
    seconds_total: Schema.Number,
    used_cpus: Schema.NullOr(Schema.Number),
    percent_of_limit: Schema.NullOr(Schema.Number),
    window_seconds: Schema.NullOr(Schema.Number),
    limit_cpus: Schema.Number
  }),
  memory: Schema.Struct({ used_bytes: Schema.NullOr(Bytes), limit_bytes: Bytes }),
  disk: Schema.Struct({ used_bytes: Schema.NullOr(Bytes), size_bytes: Bytes }),
  processes: Schema.Struct({ current: Schema.NullOr(Schema.Int), limit: Schema.Int })
}).annotations({ identifier: "MachineStats" })
export type MachineStatsDto = typeof MachineStatsDto.Type

export const statsEndpoint = Endpoint.get("stats", "/v1/machines/:id/stats", {
  summary: "Read a machine's use",
  description: "What the machine uses now against its size's limits: CPU (seconds since it was created, and " +
    "the CPUs it kept busy over a window of a quarter second, read while the request waits), memory in use " +
    "(inactive page cache left out), its disk's bytes in use and size, processes and threads. A machine " +
    "that does not run answers 200 too, with its state, its CPU total, its disk while it has one, and null " +
    "for what only a running machine has. A figure the host cannot read is null.",
  policy: policy("R", "header", Roles.anyMember),
  errors: [ResourceNotFound, ...liveHostErrors]
})
  .setPath(Schema.Struct({ id: Uuid }))
  .addSuccess(MachineStatsDto)
