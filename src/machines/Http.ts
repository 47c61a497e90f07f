import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, requester } from "../kernel/http/CallerContext.js"
import { acceptedChange } from "../kernel/http/Dto.js"
import { mapPage } from "../kernel/http/Pagination.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { machineOrigins } from "../snapshots/Http.js"
import { Snapshots } from "../snapshots/Snapshots.js"
import { machineDto, machineStatsDto } from "./Dto.js"
import { Machines } from "./Machines.js"
import { MachineStats } from "./Stats.js"

export const MachinesHandlers = HttpApiBuilder.group(Api, "machines", (handlers) =>
  Effect.gen(function*() {
    const machines = yield* Machines
    const stats = yield* MachineStats
    const config = yield* AppConfig
    // A create from a template: its disk and rules are the snapshots area's; this group only routes.
    const origins = yield* machineOrigins
    const dto = machineDto(config)
    const accepted = acceptedChange(config.baseUrl)
    const change = (
      headers: { readonly "idempotency-key"?: string | undefined },
      machineId: string,
      kind: Parameters<typeof machines.change>[2],
      request: Parameters<typeof machines.change>[3]
    ) =>
      Effect.flatMap(requester(headers), (who) => Effect.map(machines.change(who, machineId, kind, request), accepted))
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          payload.template === null
            ? Effect.map(machines.create(who, payload), accepted)
            : origins.fromTemplate(who, { ...payload, template: payload.template })))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(currentOrganization, (organization) =>
          Effect.map(
            machines.page(organization.id, urlParams.limit, urlParams.cursor ?? null, urlParams.state ?? null),
            (page) => mapPage(page, dto)
          )))
      .handle("get", ({ path }) =>
        Effect.flatMap(currentOrganization, (organization) => Effect.map(machines.find(organization.id, path.id), dto)))
      .handle("stats", ({ path }) =>
        Effect.flatMap(currentOrganization, (organization) =>
          Effect.map(stats.of(organization.id, path.id), machineStatsDto)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(requester({}), (who) =>
          Effect.map(
            machines.patch(who, path.id, {
              ...(payload.name !== undefined ? { name: payload.name } : {}),
              ...(payload.auto_stop_seconds !== undefined ? { auto_stop_seconds: payload.auto_stop_seconds } : {}),
              ...(payload.idle_sleep_seconds !== undefined ? { idle_sleep_seconds: payload.idle_sleep_seconds } : {}),
              ...(payload.auto_snapshot_keep !== undefined ? { auto_snapshot_keep: payload.auto_snapshot_keep } : {})
            }),
            dto
          )))
      .handle("start", ({ headers, path }) =>
        change(headers, path.id, "start", {}))
      .handle("stop", ({ headers, path, payload }) =>
        change(headers, path.id, "stop", { force: payload.force, stop_reason: "api" }))
      .handle("restart", ({ headers, path }) =>
        change(headers, path.id, "restart", {}))
      .handle("delete", ({ headers, path }) =>
        change(headers, path.id, "delete", {}))
      .handle("exec", ({ headers, path, payload }) =>
        change(headers, path.id, "exec", { ...payload }))
      .handle("writeFile", ({ headers, path, payload }) =>
        change(headers, path.id, "write_file", { ...payload }))
      .handle("readFile", ({ headers, path, payload }) =>
        change(headers, path.id, "read_file", { ...payload }))
      .handle("installSshKey", ({ headers, path, payload }) =>
        change(headers, path.id, "install_ssh_key", { ...payload }))
      .handle("setInternet", ({ headers, path, payload }) =>
        change(headers, path.id, "set_internet_access", { ...payload }))
      .handle("exposePort", ({ headers, path, payload }) =>
        change(headers, path.id, "expose_port", { ...payload }))
      .handle("unexposePort", ({ headers, path }) =>
        change(headers, path.id, "unexpose_port", { port: path.port }))
  })).pipe(buildWithOnly(Authorization, Machines, MachineStats, AppConfig, Snapshots))
