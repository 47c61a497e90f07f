/** Snapshots and templates over HTTP: thin, the rules are in src/services/Snapshots.ts. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import type { SnapshotDto } from "./Api.js"
import type { SnapshotRow } from "./store/SnapshotsRepo.js"

import { currentOrganization, requester } from "../kernel/http/CallerContext.js"
import { mapPage, paginate } from "../kernel/http/Pagination.js"
import { Snapshots } from "./Snapshots.js"

export const snapshotDto = (row: SnapshotRow): SnapshotDto => ({
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

/** One page of snapshot rows as DTOs. */
const pageOf = <E, R>(
  urlParams: { readonly limit: number; readonly cursor?: string | undefined },
  fetch: (options: { limit: number; after: string | null }) => Effect.Effect<ReadonlyArray<SnapshotRow>, E, R>
) =>
  Effect.map(
    paginate(urlParams.limit, (limit) => fetch({ limit, after: urlParams.cursor ?? null }), (row) => row.id),
    (page) => mapPage(page, snapshotDto)
  )

export const SnapshotsHandlers = HttpApiBuilder.group(Api, "snapshots", (handlers) =>
  Effect.gen(function*() {
    const snapshots = yield* Snapshots
    const organizationId = Effect.map(currentOrganization, (organization) => organization.id)
    return handlers
      .handle("push", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          snapshots.push(who, path.id, payload.tier ?? "warm")))
      .handle("list", ({ path, urlParams }) =>
        Effect.flatMap(organizationId, (org) =>
          pageOf(urlParams, (options) =>
            snapshots.page(org, path.id, options))))
      .handle("latest", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(snapshots.latest(org, path.id), (row) => ({
            id: row.id,
            created_at: iso(row.created_at),
            completed_at: isoOrNull(row.completed_at),
            size_bytes: row.size_bytes,
            source: row.source,
            tier: row.tier
          }))))
      .handle("deleteForMachine", ({ path, urlParams }) =>
        Effect.flatMap(organizationId, (org) =>
          snapshots.deleteForMachine(org, path.id, urlParams.source ?? null)))
      .handle("get", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(snapshots.get(org, path.snapshot_id), snapshotDto)))
      .handle("delete", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          snapshots.delete(org, path.snapshot_id)))
      .handle("bulkDelete", ({ payload }) =>
        Effect.flatMap(organizationId, (org) =>
          snapshots.bulkDelete(org, payload.snapshot_ids)))
      .handle("createTemplate", ({ headers, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          snapshots.saveTemplate(who, payload.machine_id, payload.name)))
      .handle("listTemplates", ({ urlParams }) =>
        Effect.flatMap(organizationId, (org) =>
          pageOf(urlParams, (options) =>
            snapshots.templatesPage(org, options))))
      .handle("getTemplate", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(snapshots.getTemplate(org, path.template), snapshotDto)))
      .handle("deleteTemplate", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          snapshots.deleteTemplate(org, path.template)))
  }))
