/** Snapshots and templates over HTTP: thin, the rules are in src/snapshots/Snapshots.ts. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { acceptedChange, iso, isoOrNull } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import type { SnapshotAccepted as SnapshotAcceptedDto } from "./Api.js"
import { snapshotDto } from "./store/Events.js"
import type { SnapshotRow } from "./store/SnapshotsRepo.js"

import { AppConfig } from "../kernel/config/AppConfig.js"
import { currentOrganization, requester } from "../kernel/http/CallerContext.js"
import { mapPage, paginate } from "../kernel/http/Pagination.js"
import type { Requester } from "../kernel/sql/Idempotency.js"
import type { NewMachine } from "../machines/Machines.js"
import { type SnapshotAccepted, Snapshots } from "./Snapshots.js"

/** One page of snapshot rows as DTOs. */
const pageOf = <E, R>(
  urlParams: { readonly limit: number; readonly cursor?: string | undefined },
  fetch: (options: { limit: number; after: string | null }) => Effect.Effect<ReadonlyArray<SnapshotRow>, E, R>
) =>
  Effect.map(
    paginate(urlParams.limit, (limit) => fetch({ limit, after: urlParams.cursor ?? null }), (row) => row.id),
    (page) => mapPage(page, snapshotDto)
  )

/** A push or a template save as answered: the operation to follow and the snapshot it makes. */
const snapshotAccepted = (baseUrl: string) => ({ accepted, snapshot }: SnapshotAccepted): SnapshotAcceptedDto => ({
  ...acceptedChange(baseUrl)(accepted),
  snapshot_id: snapshot.id,
  snapshot_url: `${baseUrl}/v1/snapshots/${snapshot.id}`,
  status: snapshot.status
})

/**
 * The machines group's routes whose rules are the snapshots area's: a new machine from a snapshot
 * (fork, restore) or from a template (`POST /v1/machines` with `template`).
 */
export const machineOrigins = Effect.gen(function*() {
  const snapshots = yield* Snapshots
  const accepted = acceptedChange((yield* AppConfig).baseUrl)
  return {
    fork: (who: Requester, machineId: string, body: { readonly name: string; readonly start: boolean }) =>
      Effect.map(snapshots.fork(who, machineId, body), accepted),
    restore: (
      who: Requester,
      machineId: string,
      body: { readonly name: string; readonly snapshot_id: string | null; readonly start: boolean }
    ) => Effect.map(snapshots.restore(who, machineId, body), accepted),
    fromTemplate: (who: Requester, body: NewMachine & { readonly template: string }) =>
      Effect.map(snapshots.createFromTemplate(who, body), accepted)
  }
})

export const SnapshotsHandlers = HttpApiBuilder.group(Api, "snapshots", (handlers) =>
  Effect.gen(function*() {
    const snapshots = yield* Snapshots
    const accepted = snapshotAccepted((yield* AppConfig).baseUrl)
    const organizationId = Effect.map(currentOrganization, (organization) => organization.id)
    const origins = yield* machineOrigins
    return handlers
      .handle("fork", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) => origins.fork(who, path.id, payload)))
      .handle("restore", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          origins.restore(who, path.id, payload)))
      .handle("push", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          Effect.map(snapshots.push(who, path.id, payload.tier ?? "warm"), accepted)))
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
          Effect.map(snapshots.saveTemplate(who, payload.machine_id, payload.name), accepted)))
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
  })).pipe(buildWithOnly(Authorization, AppConfig, Snapshots))
