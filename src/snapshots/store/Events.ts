/**
 * A snapshot row as the SnapshotDto of the API, and a settled row as its `snapshot.*` event: here,
 * beside the store, because the actor's settle writes the event in its transaction (a webhook's
 * `data` is the row as that transaction wrote it).
 */
import type { DomainEvent } from "../../kernel/events/DomainEvents.js"
import { iso, isoOrNull } from "../../kernel/http/Dto.js"
import type { SnapshotRow } from "./SnapshotsRepo.js"

export const snapshotDto = (row: SnapshotRow) => ({
  id: row.id,
  machine_id: row.machine_id,
  operation_id: row.operation_id,
  name: row.name,
  status: row.status,
  tier: row.tier,
  source: row.source,
  size_bytes: row.size_bytes,
  uploaded_bytes: row.uploaded_bytes,
  generation: row.generation,
  disk_synced: row.disk_synced === 1,
  manifest: row.manifest,
  parent_manifest: row.parent_manifest,
  error_code: row.error_code,
  created_at: iso(row.created_at),
  completed_at: isoOrNull(row.completed_at)
})

/** A settled snapshot as its event (extensions §9, §20): `data` is its SnapshotDto. */
export const snapshotEvent = (row: SnapshotRow): DomainEvent => ({
  _tag: "ResourceSettled",
  type: row.status === "ready" ? "snapshot.ready" : "snapshot.failed",
  data: snapshotDto(row),
  machineId: row.machine_id,
  operationId: row.operation_id,
  organizationId: row.organization_id
})
