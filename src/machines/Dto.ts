/** Rows to the DTOs of api.md and extensions.md §5. */
import { parsePorts, portUrl } from "../kernel/domain/Ports.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import type { OperationDto } from "../operations/Api.js"
import type { MachineRow } from "../runtime/MachinesRepo.js"
import type { OperationRow } from "../runtime/OperationsRepo.js"
import type { MachineDto } from "./Api.js"

export const machineDto = (baseUrl: string) => (row: MachineRow): MachineDto => ({
  id: row.id,
  organization_id: row.organization_id,
  created_by: row.created_by,
  name: row.name,
  state: row.state,
  size: row.size,
  image: row.image,
  environment_id: row.environment_id,
  environment_version: row.environment_version,
  internet_access: row.internet_access === 1,
  auto_stop_seconds: row.auto_stop_seconds,
  idle_sleep_seconds: row.idle_sleep_seconds,
  auto_snapshot_keep: row.auto_snapshot_keep ?? null,
  setup_script: row.setup_script,
  boot_id: row.boot_id,
  ports: parsePorts(row.ports).map((p) => ({ port: p.port, public: p.public, url: portUrl(baseUrl, row.id, p.port) })),
  last_stop_reason: row.last_stop_reason as MachineDto["last_stop_reason"],
  source: { kind: row.source_kind as MachineDto["source"]["kind"], id: row.source_id },
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  started_at: isoOrNull(row.started_at),
  stopped_at: isoOrNull(row.stopped_at)
})

/**
 * The start queue's view of a pending boot that waits for the host (src/runtime/HostCapacity.ts).
 * `reason` is `host_at_capacity`: this server is one host, so it never says `no_host_in_region`.
 */
const startingSoon = (row: OperationRow, positionOf: (operationId: string) => number | undefined) =>
  row.status !== "pending" || row.queued_at === null || row.queue_expires_at === null ? null : {
    operation_id: row.id,
    position: positionOf(row.id) ?? 1,
    priority: row.queue_priority ?? "trial",
    reason: "host_at_capacity",
    queued_at: iso(row.queued_at),
    expires_at: iso(row.queue_expires_at)
  }

export const operationDto =
  (positionOf: (operationId: string) => number | undefined) => (row: OperationRow): OperationDto => {
    const result = row.result === null ? null : JSON.parse(row.result)
    return {
      id: row.id,
      machine_id: row.machine_id,
      kind: row.kind,
      status: row.status,
      attempt_count: row.attempt_count,
      error_code: row.error_code,
      completed_but_unchanged: row.completed_but_unchanged === 1,
      stop_reason: row.stop_reason as OperationDto["stop_reason"],
      exec_result: result?.exec_result ?? null,
      file_ranges: result?.file_ranges ?? null,
      starting_soon: startingSoon(row, positionOf),
      created_at: iso(row.created_at),
      started_at: isoOrNull(row.started_at),
      finished_at: isoOrNull(row.finished_at)
    }
  }
