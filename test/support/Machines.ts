/**
 * Helpers for machine tests over HTTP. Waiting uses real timers (not Effect.sleep), so a test may
 * hold a TestClock still while it waits for real work (a sandbox booting) to finish.
 */
import { Effect } from "effect"
import type { client } from "./Http.js"

export type Api = ReturnType<typeof client>

const terminal = ["succeeded", "failed", "correlation_miss"]

export const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * Polls until `check` answers a value (not undefined), for at most `ms` of real time: generous, as
 * machines boot and commands run slowly on CI's loaded 2-core box.
 */
export const eventually = <A>(check: Effect.Effect<A | undefined>, ms = 60_000): Effect.Effect<A> =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (true) {
      const value = yield* check
      if (value !== undefined) return value
      if (Date.now() > deadline) return yield* Effect.dieMessage(`condition not met within ${ms} ms`)
      yield* realSleep(10)
    }
  })

/** The operation once it is terminal. */
export const settled = (api: Api, operationId: string, ms = 60_000) =>
  eventually(
    Effect.map(api("GET", `/v1/operations/${operationId}`), (reply) =>
      terminal.includes(reply.body?.status) ? reply.body : undefined),
    ms
  )

/** The operation once it has status `status`. */
export const reached = (api: Api, operationId: string, status: string) =>
  eventually(
    Effect.map(api("GET", `/v1/operations/${operationId}`), (reply) =>
      reply.body?.status === status ? reply.body : undefined)
  )

/** Accepts a change and answers its settled operation; fails the test on a non-202 answer. */
export const change = (api: Api, method: string, path: string, json?: unknown) =>
  Effect.gen(function*() {
    const accepted = yield* api(method, path, json === undefined ? {} : { json })
    if (accepted.status !== 202) {
      return yield* Effect.dieMessage(`${method} ${path}: ${accepted.status} ${accepted.text}`)
    }
    return yield* settled(api, accepted.body.operation_id)
  })

/** A running machine, created with `body` merged into the defaults. */
export const runningMachine = (api: Api, name: string, body: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const accepted = yield* api("POST", "/v1/machines", { json: { name, ...body } })
    if (accepted.status !== 202) return yield* Effect.dieMessage(`create: ${accepted.status} ${accepted.text}`)
    const operation = yield* settled(api, accepted.body.operation_id)
    if (operation.status !== "succeeded") return yield* Effect.dieMessage(`create: ${JSON.stringify(operation)}`)
    return accepted.body.machine_id as string
  })

export const decode = (base64: string) => Buffer.from(base64, "base64").toString("utf8")

/** Runs a shell command in the machine and answers its settled operation. */
export const sh = (api: Api, machineId: string, shell: string, extra: Record<string, unknown> = {}) =>
  change(api, "POST", `/v1/machines/${machineId}/exec`, { shell, ...extra })

/** Reads an SSE response body completely (the stream ends after `end`). */
export const readEvents = (url: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    const text = await response.text()
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      events: text.split("\n\n").filter((block) => block.trim() !== "").map((block) => {
        const fields: Record<string, string> = {}
        for (const line of block.split("\n")) {
          const at = line.indexOf(":")
          if (at > 0) fields[line.slice(0, at)] = line.slice(at + 1).trimStart()
        }
        return {
          id: fields.id,
          event: fields.event,
          data: fields.data === undefined ? undefined : JSON.parse(fields.data)
        }
      })
    }
  })

/** Reads an operation's event stream until an event named `name` arrives (then stops reading). */
export const awaitEvent = (url: string, headers: Record<string, string>, name: string) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(url, { headers, signal: controller.signal })
    const reader = response.body!.getReader()
    let text = ""
    try {
      while (!text.includes(`event: ${name}\n`)) {
        const { done, value } = await reader.read()
        if (done) break
        text += Buffer.from(value).toString("utf8")
      }
    } finally {
      controller.abort()
    }
    return text.includes(`event: ${name}\n`)
  })
