import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { currentOrganization, currentUser, requester } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { PortTokens } from "../ports/PortTokens.js"
import { MachinesRepo } from "../runtime/MachinesRepo.js"
import { Snapshots } from "../snapshots/Snapshots.js"
import { machineDto } from "./Dto.js"
import { Machines } from "./Machines.js"

export const MachinesHandlers = HttpApiBuilder.group(Api, "machines", (handlers) =>
  Effect.gen(function*() {
    const machines = yield* Machines
    const repo = yield* MachinesRepo
    const config = yield* AppConfig
    const portTokens = yield* PortTokens
    const snapshots = yield* Snapshots
    const dto = machineDto(config.baseUrl)
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          payload.template === null
            ? machines.create(who, payload)
            : snapshots.createFromTemplate(who, { ...payload, template: payload.template })))
      .handle("fork", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) => snapshots.fork(who, path.id, payload)))
      .handle("restore", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          snapshots.restore(who, path.id, payload)))
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const rows = yield* repo.page(organization.id, {
            limit: urlParams.limit + 1,
            after: urlParams.cursor ?? null,
            state: urlParams.state ?? null
          })
          const page = rows.slice(0, urlParams.limit)
          return {
            items: page.map(dto),
            next_cursor: rows.length > urlParams.limit ? page[page.length - 1]!.id : null
          }
        }))
      .handle("get", ({ path }) =>
        Effect.flatMap(currentOrganization, (organization) =>
          Effect.map(machines.find(organization.id, path.id), dto)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(currentOrganization, (organization) =>
          Effect.map(
            machines.patch(organization.id, path.id, {
              ...(payload.name !== undefined ? { name: payload.name } : {}),
              ...(payload.auto_stop_seconds !== undefined ? { auto_stop_seconds: payload.auto_stop_seconds } : {}),
              ...(payload.idle_sleep_seconds !== undefined ? { idle_sleep_seconds: payload.idle_sleep_seconds } : {}),
              ...(payload.auto_snapshot_keep !== undefined ? { auto_snapshot_keep: payload.auto_snapshot_keep } : {})
            }),
            dto
          )))
      .handle("start", ({ headers, path }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "start", {})))
      .handle("stop", ({ headers, path, payload }) =>
        Effect.flatMap(
          requester(headers),
          (who) =>
            machines.change(who, path.id, "stop", { force: payload.force, stop_reason: "api" })
        ))
      .handle("restart", ({ headers, path }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "restart", {})))
      .handle("delete", ({ headers, path }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "delete", {})))
      .handle("exec", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "exec", { ...payload })))
      .handle("writeFile", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "write_file", { ...payload })))
      .handle("readFile", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "read_file", { ...payload })))
      .handle("installSshKey", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "install_ssh_key", { ...payload })))
      .handle("setInternet", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "set_internet_access", { ...payload })))
      .handle("exposePort", ({ headers, path, payload }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "expose_port", { ...payload })))
      .handle("unexposePort", ({ headers, path }) =>
        Effect.flatMap(requester(headers), (who) =>
          machines.change(who, path.id, "unexpose_port", { port: path.port })))
      .handle("createPortToken", ({ path, payload }) =>
        Effect.gen(function*() {
          const organization = yield* currentOrganization
          const user = yield* currentUser
          const made = yield* portTokens.create(
            { organizationId: organization.id, userId: user.id },
            path.id,
            path.port,
            payload.expires_in_seconds
          )
          return { token: made.token, url: made.url, expires_at: iso(made.expiresAt) }
        }))
  }))
