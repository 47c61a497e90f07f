/** Rows to the DTOs of api.md and extensions.md §5. */
import { hostSettingsOf } from "../kernel/config/AppConfig.js"
import { parsePorts, portUrl } from "../kernel/domain/Ports.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import type { MachineRow } from "../runtime/MachinesRepo.js"
import type { MachineDto } from "./Api.js"
import { cpuWindowMillis, type StatsReading } from "./Stats.js"
import type { MachineStatsDto } from "./StatsApi.js"

export const machineDto = (
  config: { readonly baseUrl: string; readonly portsUrl?: string | undefined; readonly hostId?: string | undefined }
) =>
(row: MachineRow): MachineDto => ({
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
  stopped_at: isoOrNull(row.stopped_at),
  host_id: row.host_id ?? hostSettingsOf(config).hostId
})

const mib = 1024 ** 2
const orNull = (value: number | undefined) => (value === undefined ? null : Math.round(value))

export const machineStatsDto = ({ limits, machine, readAt, usage, usedCpus }: StatsReading): MachineStatsDto => ({
  machine_id: machine.id,
  state: machine.state,
  size: machine.size,
  boot_id: usage.running ? machine.boot_id : null,
  started_at: usage.running ? isoOrNull(machine.started_at) : null,
  read_at: iso(readAt),
  cpu: {
    seconds_total: Math.round(usage.cpuSeconds * 1_000) / 1_000,
    used_cpus: usedCpus === undefined ? null : Math.round(usedCpus * 1_000) / 1_000,
    percent_of_limit: usedCpus === undefined ? null : Math.round((usedCpus / limits.cpus) * 1_000) / 10,
    window_seconds: usedCpus === undefined ? null : cpuWindowMillis / 1_000,
    limit_cpus: limits.cpus
  },
  memory: {
    used_bytes: usage.running ? orNull(usage.memoryBytes) : null,
    limit_bytes: usage.memoryLimitBytes ?? limits.memory_mib * mib
  },
  disk: { used_bytes: orNull(usage.diskUsedBytes), size_bytes: usage.diskSizeBytes ?? limits.disk_mib * mib },
  processes: {
    current: usage.running ? orNull(usage.processes) : null,
    limit: usage.processesLimit ?? limits.processes
  }
})
