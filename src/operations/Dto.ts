/** Operation rows to the OperationDto of api.md, with the start queue's view of a waiting boot. */
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import type { OperationRow } from "../runtime/OperationsRepo.js"
import type { OperationDto } from "./Api.js"

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
