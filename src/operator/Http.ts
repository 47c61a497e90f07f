import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { HostsRepo } from "../kernel/sql/HostsRepo.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { AbuseFlags } from "./AbuseFlags.js"
import { hostDto, listHosts } from "./Hosts.js"
import type { AbuseFlagRow } from "./Repo.js"
import { Suspensions, type SuspensionView } from "./Suspensions.js"

const suspensionDto = (view: SuspensionView) => ({
  organization_id: view.suspension.organization_id,
  already_suspended: view.alreadySuspended,
  reason: view.suspension.reason,
  suspended_at: iso(view.suspension.suspended_at),
  machines_stopping: view.machinesStopping,
  channels_revoked: view.channelsRevoked,
  tickets_revoked: view.ticketsRevoked
})

const flagDto = (row: AbuseFlagRow) => ({
  id: row.id,
  organization_id: row.organization_id,
  machine_id: row.machine_id,
  stop_operation_id: row.stop_operation_id,
  kind: row.kind,
  action: row.action,
  resolution: row.resolution,
  resolution_note: row.resolution_note,
  min_cpu_permille: row.min_cpu_permille,
  window_seconds: row.window_seconds,
  window_start: iso(row.window_start),
  created_at: iso(row.created_at),
  resolved_at: isoOrNull(row.resolved_at)
})

export const OperatorHandlers = HttpApiBuilder.group(Api, "operator", (handlers) =>
  Effect.gen(function*() {
    const suspensions = yield* Suspensions
    const flags = yield* AbuseFlags
    const lease = yield* HostLease
    // This node's host is live while it answers (on SQLite its lease is never renewed).
    const hosts = listHosts((row) => row.host_id === lease.hostId)
    return handlers
      .handle("suspend", ({ path, payload }) =>
        Effect.map(suspensions.suspend(path.organization_id.toLowerCase(), payload), suspensionDto))
      .handle("resume", ({ path, payload }) => {
        const organizationId = path.organization_id.toLowerCase()
        return Effect.map(suspensions.resume(organizationId, payload), (resumed) => ({
          organization_id: organizationId,
          resumed
        }))
      })
      .handle("listAbuseFlags", ({ urlParams }) =>
        Effect.map(
          flags.list({ all: urlParams.status === "all", limit: urlParams.limit }),
          (rows) => ({ items: rows.map(flagDto) })
        ))
      .handle("resolveAbuseFlag", ({ path, payload }) =>
        Effect.map(flags.resolve(path.flag_id, payload), flagDto))
      .handle("listHosts", () => Effect.map(hosts, (views) => ({ items: views.map(hostDto) })))
  })).pipe(buildWithOnly(Authorization, AbuseFlags, Suspensions, HostLease, HostsRepo, EngineReads))
