/** Rows to the DTOs of api.md and extensions.md §5. */
import { parsePorts, portUrl } from "../kernel/domain/Ports.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import type { MachineRow } from "../runtime/MachinesRepo.js"
import type { MachineDto } from "./Api.js"

export const machineDto =
  (config: { readonly baseUrl: string; readonly portsUrl?: string | undefined }) => (row: MachineRow): MachineDto => ({
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
    ports: parsePorts(row.ports).map((p) => ({ port: p.port, public: p.public, url: portUrl(config, row.id, p.port) })),
    last_stop_reason: row.last_stop_reason as MachineDto["last_stop_reason"],
    source: { kind: row.source_kind as MachineDto["source"]["kind"], id: row.source_id },
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    started_at: isoOrNull(row.started_at),
    stopped_at: isoOrNull(row.stopped_at)
  })
