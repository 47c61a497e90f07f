/**
 * Fuzz at the front door: fast-check (through effect's own FastCheck re-export) sends thousands of
 * generated requests to every route of the API, found by walking `Api`'s groups and endpoints, at a
 * real server (sandboxed machines) with a real key: wrong types, huge strings, unicode, NUL bytes,
 * missing and extra members, bad UUIDs, odd content types, junk headers and path segments, and
 * now and then a valid body (its commands made harmless), so that the routes behind the door run too.
 *
 * Properties: no answer is a 500; every request is answered within `requestBound` (an event stream
 * counts as answered once its first bytes arrive); and afterwards every machine of the organization
 * (three made first, any a valid create made) settles what it accepted and, unless deleted or
 * failed, still runs an exec (a stopped one is started first).
 *
 * The operator routes are open to the fuzz (the server has an operator token, which most requests
 * carry); a valid suspend of the organization is lifted before the machines are checked.
 * The server has secret keys, and the unsubscribe link's `token` is now and then one it signed (or
 * one altered), so the alert routes' bodies and Accept headers are fuzzed past the token check.
 *
 * FUZZ_RUNS (10,000: about 35 s here) and FUZZ_SEED set the number of requests and the seed; a
 * failure names the seed to replay; FUZZ_VERBOSE prints progress.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Arbitrary, Effect, FastCheck as fc, Logger, LogLevel, Option, Redacted, Schema, SchemaAST } from "effect"
import * as NodeCrypto from "node:crypto"
import { alertTypes } from "../../src/alerts/Types.js"
import { makeUnsubscribeTokens } from "../../src/alerts/UnsubscribeTokens.js"
import { Api } from "../../src/Api.js"
import { deviceTokenMembers } from "../../src/identity/DeviceApi.js"
import { makeClient, WaitTimeout } from "../../src/index.js"
import { AppConfig } from "../../src/kernel/config/AppConfig.js"
import { SecretBox } from "../../src/kernel/crypto/SecretBox.js"
import { client, request as httpRequest } from "../support/Http.js"
import { runningMachine } from "../support/Machines.js"
import { invite, joined } from "../support/Members.js"
import { signIn } from "../support/SignIn.js"
import { startStripeServer, stripeSettings } from "../support/StripeServer.js"
import { mustOpen, openTerminal } from "../support/Terminals.js"
import { startServer } from "../support/TestServer.js"

/** Keys for webhook secrets and signed unsubscribe links, so those routes run past their 503 and 400. */
const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

const runs = Number(process.env["FUZZ_RUNS"] ?? 10_000)
const seed = process.env["FUZZ_SEED"] === undefined
  ? Math.floor(Math.random() * 2 ** 31)
  : Number(process.env["FUZZ_SEED"])
/** FUZZ_SESSION_RUNS (2,000) for the session-only routes of members and invitations. */
const sessionRuns = Number(process.env["FUZZ_SESSION_RUNS"] ?? 2_000)
const requestBound = 15_000
/** FUZZ_VERBOSE=1 writes the seed and progress to stderr as the run goes. */
const progress = (line: string) => {
  if (process.env["FUZZ_VERBOSE"] !== undefined) process.stderr.write(`fuzz: ${line}\n`)
}

interface Route {
  readonly name: string
  readonly method: string
  readonly path: string
  readonly fields: ReadonlyArray<string>
  readonly payload: Schema.Schema.Any | undefined
  readonly query: ReadonlyArray<string>
}

const fieldsOf = (schema: Schema.Schema.Any | undefined): ReadonlyArray<string> => {
  if (schema === undefined) return []
  try {
    return SchemaAST.getPropertySignatures(Schema.encodedSchema(schema).ast).map((p) => String(p.name))
  } catch {
    return []
  }
}

const routes: ReadonlyArray<Route> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint): Route => ({
    name: `${group.identifier}.${endpoint.name}`,
    method: endpoint.method,
    path: endpoint.path,
    fields: fieldsOf(Option.getOrUndefined(endpoint.payloadSchema)),
    payload: Option.getOrUndefined(endpoint.payloadSchema),
    query: fieldsOf(Option.getOrUndefined(endpoint.urlParamsSchema))
  }))
)

// ---- values -------------------------------------------------------------------------------------

const oddStrings = fc.constantFrom(
  "",
  " ",
  "null",
  "true",
  "-1",
  "1e309",
  "NaN",
  "a\u0000b",
  "\u0000",
  "/root/a\u0000b",
  "/",
  "../../../../etc/passwd",
  "%00",
  "%",
  "\uFFFF",
  "\uD800",
  "e\u0301",
  "😀".repeat(50),
  "' OR 1=1 --",
  "${jndi:ldap://x}",
  "<script>",
  "\r\n",
  "A".repeat(300),
  "not-a-uuid",
  "00000000-0000-0000-0000-000000000000",
  "0190D9A2-0000-7000-8000-00000000000G",
  " 0190d9a2-0000-7000-8000-000000000001"
)
const hugeString = fc.integer({ min: 1_000, max: 80_000 }).map((n) => "x".repeat(n))
const unicodeString = fc.string({ unit: "binary", maxLength: 40 })
const anyString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: oddStrings },
  { weight: 2, arbitrary: unicodeString },
  { weight: 1, arbitrary: hugeString }
)
const anyNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 59, 60, 65535, 65536, 3600, 3601, 2 ** 53, -(2 ** 31), 1e308)
)

/** JSON values of every kind, nested a little. */
const jsonValue = (ids: fc.Arbitrary<string>): fc.Arbitrary<unknown> =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      anyString,
      ids,
      anyNumber,
      fc.boolean(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 12 }), tie("value"), { maxKeys: 4 })
    )
  })).value

/** Strings a command could start with are made into names no program has, so a valid exec does nothing. */
const harmless = (body: unknown): unknown => {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return body
  const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) }
  if (Array.isArray(copy["command"]) && typeof copy["command"][0] === "string") {
    copy["command"] = ["fuzz_" + copy["command"][0], ...copy["command"].slice(1)]
  }
  for (const key of ["shell", "setup_script"]) {
    if (typeof copy[key] === "string") copy[key] = "fuzz_" + copy[key]
  }
  if (typeof copy["timeout_seconds"] === "number") copy["timeout_seconds"] = Math.min(copy["timeout_seconds"], 5)
  return copy
}

/** Valid wire bodies of a route, when its schema has an arbitrary. */
const validBodies = (route: Route): fc.Arbitrary<unknown> | undefined => {
  if (route.payload === undefined) return undefined
  try {
    const encode = Schema.encodeSync(route.payload as Schema.Schema<unknown, unknown>)
    return (Arbitrary.make(route.payload) as fc.Arbitrary<unknown>).map((value) => harmless(encode(value)))
  } catch {
    return undefined
  }
}

/** The paths of every string in a JSON value (keys of records included, as `{key}`). */
const stringPaths = (
  value: unknown,
  path: ReadonlyArray<string | number> = []
): Array<ReadonlyArray<string | number>> => {
  if (typeof value === "string") return [path]
  if (Array.isArray(value)) return value.flatMap((item, i) => stringPaths(item, [...path, i]))
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([key, item]) => [[...path, `{${key}}`], ...stringPaths(item, [...path, key])])
  }
  return []
}

/** `value` with `edit` applied to the string at `path` (a `{key}` step renames that key). */
const editAt = (value: unknown, path: ReadonlyArray<string | number>, edit: (text: string) => string): unknown => {
  if (path.length === 0) return typeof value === "string" ? edit(value) : value
  const [step, ...rest] = path
  if (Array.isArray(value)) return value.map((item, i) => (i === step ? editAt(item, rest, edit) : item))
  const record = value as Record<string, unknown>
  if (typeof step === "string" && step.startsWith("{") && rest.length === 0) {
    const key = step.slice(1, -1)
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k === key ? edit(k) : k, v]))
  }
  return { ...record, [step!]: editAt(record[step as string], rest, edit) }
}

/** One member of a valid body replaced, dropped or added, or a NUL put into one of its strings, however deep. */
const defect = (ids: fc.Arbitrary<string>) => (body: unknown): fc.Arbitrary<unknown> => {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return fc.constant(body)
  const record = body as Record<string, unknown>
  const keys = Object.keys(record)
  const paths = stringPaths(body)
  return fc.oneof(
    fc.tuple(fc.string({ maxLength: 20 }), jsonValue(ids)).map(([key, value]) => ({ ...record, [key]: value })),
    keys.length === 0
      ? fc.constant(record)
      : fc.tuple(fc.constantFrom(...keys), jsonValue(ids)).map(([key, value]) => ({ ...record, [key]: value })),
    keys.length === 0 ? fc.constant(record) : fc.constantFrom(...keys).map((key) => {
      const { [key]: _, ...rest } = record
      return rest
    }),
    paths.length === 0
      ? fc.constant(record)
      : fc.tuple(fc.constantFrom(...paths), fc.nat()).map(([path, at]) =>
        editAt(body, path, (text) => {
          const i = at % (text.length + 1)
          return text.slice(0, i) + "\u0000" + text.slice(i)
        })
      )
  )
}

// ---- requests -----------------------------------------------------------------------------------

/** Percent-encoding of any string (a lone surrogate cannot be encoded: it becomes U+FFFD). */
const encode = (text: string) =>
  encodeURIComponent(text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD"))

interface Generated {
  readonly route: string
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

const rawBodies = fc.oneof(
  fc.constantFrom(
    "",
    "{",
    "nul",
    "[]",
    "\"text\"",
    "1",
    "{\"a\":",
    "{}{}",
    "\u0000",
    "[".repeat(5_000) + "]".repeat(5_000)
  ),
  fc.integer({ min: 1, max: 200_000 }).map((depth) => "[".repeat(depth)),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 })
)

const pathSegment = (ids: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 12, arbitrary: ids },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: fc.oneof(fc.string({ maxLength: 40 }), oddStrings, unicodeString).map(encode) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 20_000 }).map((n) => "x".repeat(n)) },
    { weight: 1, arbitrary: fc.constantFrom("%", "%zz", "%00", "..", "%2e%2e", "%2F", "a%2Fb", ";", "8080", "-1") }
  )

/** The server's operator token: the operator routes are fuzzed behind the door too. */
const operatorToken = "fuzz-operator-token"

/** A signed-in browser's cookies and CSRF token: the session routes' requests carry them. */
interface BrowserSession {
  readonly cookie: string
  readonly csrf: string
}

/**
 * What the generated requests carry: a key by default, mostly a browser session's cookie and CSRF
 * token with `session`; `headers` replaces the generated headers; `routes` narrows the routes.
 */
interface RequestContext {
  readonly key: string
  readonly orgId: string
  readonly ids: ReadonlyArray<string>
  readonly routes?: ReadonlyArray<Route> | undefined
  readonly headers?: fc.Arbitrary<Record<string, string | undefined>> | undefined
  /** Sent mostly instead of the key (session-only routes), with its CSRF token. */
  readonly session?: BrowserSession | undefined
  /** Unsubscribe tokens the server signed (and altered ones), so the link's routes run past the check. */
  readonly tokens?: ReadonlyArray<string> | undefined
}

const requests = (context: RequestContext) => {
  const ids = fc.constantFrom(...context.ids)
  const header = fc.string({ maxLength: 60 }).map((s) => s.trim())
  const junkAuthorization = fc.oneof(
    fc.constantFrom("Bearer svc_junk", `Bearer ${context.key}x`, "Basic eDp5", "Bearer"),
    header.map((s) => `Bearer ${s}`)
  )
  const session = context.session
  const sessionHeaders = session === undefined ? {} : {
    authorization: fc.oneof(
      { weight: 20, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constant(`Bearer ${context.key}`) },
      { weight: 1, arbitrary: junkAuthorization }
    ),
    cookie: fc.oneof(
      { weight: 30, arbitrary: fc.constant(session.cookie) },
      { weight: 1, arbitrary: header.map((s) => `svc_session=${encode(s)}; svc_csrf=x`) }
    ),
    "x-csrf-token": fc.oneof({ weight: 30, arbitrary: fc.constant(session.csrf) }, { weight: 1, arbitrary: header })
  }
  const headers = fc.record({
    authorization: fc.oneof(
      { weight: 40, arbitrary: fc.constant(`Bearer ${context.key}`) },
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: junkAuthorization }
    ),
    "content-type": fc.oneof(
      { weight: 16, arbitrary: fc.constant("application/json") },
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          undefined,
          "text/plain",
          "application/json; charset=utf-16",
          "multipart/form-data; boundary=x",
          "application/x-www-form-urlencoded",
          "application/problem+json"
        )
      },
      { weight: 1, arbitrary: header }
    ),
    "x-organization-id": fc.option(fc.oneof(fc.constant(context.orgId), fc.uuid(), header), {
      nil: undefined,
      freq: 8
    }),
    "idempotency-key": fc.option(fc.oneof(fc.uuid(), header, fc.constant("k".repeat(5_000)), fc.constant("\"q\"")), {
      nil: undefined,
      freq: 3
    }),
    "x-correlation-id": fc.option(header, { nil: undefined, freq: 8 }),
    accept: fc.option(fc.constantFrom("text/event-stream", "application/json", "*/*", "text/html"), {
      nil: undefined,
      freq: 6
    }),
    "last-event-id": fc.option(fc.oneof(header, fc.constantFrom("0", "-1", "99999999999999999999")), {
      nil: undefined,
      freq: 8
    }),
    cookie: fc.option(header.map((s) => `svc_session=${encode(s)}; svc_csrf=x`), { nil: undefined, freq: 10 }),
    "x-csrf-token": fc.option(header, { nil: undefined, freq: 10 }),
    ...sessionHeaders,
    "x-svc-operator-token": fc.option(
      fc.oneof({ weight: 8, arbitrary: fc.constant(operatorToken) }, { weight: 1, arbitrary: header }),
      { nil: undefined, freq: 4 }
    )
  }, { requiredKeys: session === undefined ? [] : ["cookie", "x-csrf-token"] })
  const perRoute = (context.routes ?? routes).map((route) => {
    const valid = validBodies(route)
    const junkObject = fc.tuple(
      fc.record(Object.fromEntries(route.fields.map((field) => [field, jsonValue(ids)])), { requiredKeys: [] }),
      fc.dictionary(fc.string({ maxLength: 16 }), jsonValue(ids), { maxKeys: 3 })
    ).map(([known, extra]) => ({ ...extra, ...known }))
    const bodies: fc.Arbitrary<string | undefined> = fc.oneof(
      { weight: 4, arbitrary: junkObject.map((body) => JSON.stringify(body)) },
      { weight: 2, arbitrary: jsonValue(ids).map((body) => JSON.stringify(body)) },
      { weight: 2, arbitrary: rawBodies },
      { weight: 1, arbitrary: fc.constant(undefined) },
      ...(valid === undefined ? [] : [
        { weight: 4, arbitrary: valid.chain(defect(ids)).map((body) => JSON.stringify(body)) },
        { weight: 3, arbitrary: valid.map((body) => JSON.stringify(body)) }
      ])
    )
    const query = fc.tuple(
      fc.record(
        Object.fromEntries(route.query.map((name) => [
          name,
          name === "token"
            ? fc.oneof(fc.constantFrom(...(context.tokens ?? ["none"])), anyString, ids)
            : fc.oneof(anyString, ids, fc.nat().map(String))
        ])),
        { requiredKeys: [] }
      ),
      fc.dictionary(fc.string({ maxLength: 10 }), anyString, { maxKeys: 2 }),
      fc.boolean()
    ).map(([known, extra, raw]) => {
      const entries = Object.entries({ ...extra, ...known }) as Array<[string, string]>
      if (entries.length === 0) return raw ? "?%zz=%" : ""
      return "?" + entries.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&")
    })
    const path = fc.tuple(
      ...route.path.split("/").map((segment) => segment.startsWith(":") ? pathSegment(ids) : fc.constant(segment))
    ).map((segments) => segments.join("/"))
    return fc.record({ path, query, headers: context.headers ?? headers, body: bodies }).map((
      { body, headers, path, query }
    ): Generated => ({
      route: route.name,
      method: route.method,
      url: path + query,
      headers: Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<string, string>,
      body: route.method === "GET" ? undefined : body
    }))
  })
  return fc.oneof(...perRoute)
}

const terminal = new Set(["succeeded", "failed", "correlation_miss"])

interface Answer {
  readonly status: number
  readonly text: string
}

/** Sends one request; fails if it is not answered within the bound (an event stream: its first bytes). */
const send = async (base: string, request: Generated): Promise<Answer> => {
  const signal = AbortSignal.timeout(requestBound)
  try {
    const response = await fetch(base + request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body ?? null,
      redirect: "manual",
      signal
    })
    if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
      const reader = response.body!.getReader()
      await reader.read()
      await reader.cancel()
      return { status: response.status, text: "(event stream)" }
    }
    return { status: response.status, text: await response.text() }
  } catch (error) {
    if (signal.aborted) throw new Error(`no answer within ${requestBound} ms: ${show(request)}`)
    throw new Error(`request failed (${error}): ${show(request)}`)
  }
}

const show = (request: Generated) =>
  `${request.route}: ${request.method} ${request.url.slice(0, 300)} headers=${
    JSON.stringify(request.headers).slice(0, 300)
  } body=${JSON.stringify(request.body?.slice(0, 300))}`

/**
 * Sends `runs` generated requests; answers the failures (500s, hangs) and the count of each status.
 * Every 500 is collected, not only the first; a request with no answer ends the run after three.
 */
const fuzz = (
  server: string,
  arbitrary: fc.Arbitrary<Generated>,
  runs: number,
  onAnswer?: (request: Generated, answer: Answer) => void
) =>
  Effect.promise(async () => {
    const failures: Array<string> = []
    const statuses = new Map<number, number>()
    let broken = 0
    let sent = 0
    const started = Date.now()
    await fc.assert(
      fc.asyncProperty(arbitrary, async (request) => {
        if (++sent % 250 === 0) progress(`${sent} requests, ${(Date.now() - started) / 1000} s`)
        const answer = await send(server, request).catch((error: Error) => {
          failures.push(error.message)
          return undefined
        })
        if (answer === undefined) return ++broken < 3
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        onAnswer?.(request, answer)
        if (answer.status === 500 && failures.length < 50) {
          failures.push(`500: ${show(request)} -> ${answer.text.slice(0, 200)}`)
        }
        return true
      }),
      { numRuns: runs, seed, endOnFailure: true }
    ).catch((error: Error) => {
      failures.push(error.message.split("\n").slice(0, 2).join(" "))
    })
    return { failures, statuses, seconds: (Date.now() - started) / 1000 }
  })

const statusLine = (statuses: Map<number, number>) =>
  JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))

describe("fuzz: every route at the door", () => {
  it.scopedLive(
    "thousands of generated requests: never a 500, never a hang, and the machines still run an exec",
    () =>
      Effect.gen(function*() {
        // Errors are logged, so that a 500's cause shows beside its request.
        const server = yield* startServer({
          runtime: "sandbox",
          logLevel: "error",
          operatorToken: Option.some(Redacted.make(operatorToken)),
          secretKeys
        })
        const owner = yield* server.bootstrap("fuzz@example.com")
        const signed = yield* Effect.forEach(alertTypes, (type) =>
          Effect.flatMap(makeUnsubscribeTokens, (tokens) =>
            tokens.sign({ organizationId: owner.organization_id, userId: owner.user_id, type })).pipe(
              Effect.provide(SecretBox.layer),
              Effect.provideService(AppConfig, server.config)
            ))
        const tokens = [
          ...signed,
          ...signed.map((token) =>
            token.slice(0, -3) + "abc"
          )
        ]
        const svc = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
        const probes = yield* Effect.forEach(["fuzz-a", "fuzz-b", "fuzz-c"], (name) =>
          Effect.flatMap(
            svc.machines.create({ payload: { name } }),
            (accepted) => Effect.as(svc.waitOperation(accepted, { timeout: "60 seconds" }), accepted)
          ))
        const ids = [
          ...probes.map((p) => p.machine_id),
          ...probes.map((p) => p.operation_id),
          owner.organization_id,
          "0190d9a2-0000-7000-8000-000000000001"
        ]
        const acceptedFor = new Map<string, Array<Generated>>()
        progress(`seed ${seed}`)
        const { failures, seconds, statuses } = yield* fuzz(
          server.url,
          requests({ key: owner.api_key, orgId: owner.organization_id, ids, tokens }),
          runs,
          (request, answer) => {
            if (answer.status !== 202) return
            const machineId = (JSON.parse(answer.text) as { machine_id?: string }).machine_id
            if (machineId !== undefined) acceptedFor.set(machineId, [...(acceptedFor.get(machineId) ?? []), request])
          }
        )
        console.log(
          `fuzz (FUZZ_SEED=${seed}): ${runs} requests in ${seconds.toFixed(1)} s; statuses ${statusLine(statuses)}`
        )

        // A valid suspend may have hit the organization: the operator lifts it before the machines are checked.
        const resumed = yield* Effect.promise(() =>
          fetch(`${server.url}/v1/operator/organizations/${owner.organization_id}/resume`, {
            method: "POST",
            headers: { "x-svc-operator-token": operatorToken, "content-type": "application/json" },
            body: JSON.stringify({ operator: "fuzz", reason: "after the fuzz" })
          })
        )
        assert.strictEqual(resumed.status, 200)

        progress("checking the machines")
        // Every machine of the organization (the probes and any a valid create made) settles every
        // operation it accepted, and one that runs, or can be started, still takes an exec.
        const machines = yield* svc.machines.list({ urlParams: { limit: "100" } })
        const stuck: Array<{ readonly id: string; readonly why: string }> = []
        const check = (id: string) =>
          Effect.gen(function*() {
            const ops = yield* svc.operations.listForMachine({ path: { id }, urlParams: { limit: "100" } })
            // Bounded: a mailbox still held after this is reported without trying more on it.
            yield* Effect.forEach(
              ops.items.filter((op) => !terminal.has(op.status)),
              (op) => svc.waitOperation(op.id, { timeout: "30 seconds" }),
              { concurrency: "unbounded" }
            )
            const machine = yield* svc.machines.get({ path: { id } })
            if (machine.state === "deleted" || machine.state === "failed") return
            if (machine.state !== "running") {
              yield* svc.waitOperation(yield* svc.machines.start({ path: { id } }), { timeout: "30 seconds" })
            }
            const exec = yield* svc.machines.exec({ path: { id }, payload: { command: ["echo", "still here"] } })
            const done = yield* svc.waitOperation(exec, { timeout: "30 seconds" })
            if (done.status !== "succeeded" || done.exec_result?.exit_code !== 0) {
              return yield* Effect.fail(`exec ended ${done.status} ${done.error_code ?? ""}`)
            }
          }).pipe(
            Effect.catchAll((error) =>
              Effect.sync(() =>
                stuck.push({
                  id,
                  why: error instanceof WaitTimeout
                    ? `operation ${error.operation_id} (${error.last.kind}) still ${error.last.status}`
                    : typeof error === "string"
                    ? error
                    : JSON.stringify(error).slice(0, 300)
                })
              )
            )
          )
        yield* Effect.forEach(machines.items, (machine) => check(machine.id), {
          discard: true,
          concurrency: "unbounded"
        })
        for (const { id, why } of stuck) {
          const sentToIt = acceptedFor.get(id) ?? []
          failures.push(`machine ${id} no longer runs an exec: ${why}; accepted for it: ${
            sentToIt.map((r) => `${r.route} ${JSON.stringify(r.body?.slice(0, 200))}`).join(" | ")
          }`)
        }
        assert.deepStrictEqual(failures, [], `replay with FUZZ_SEED=${seed} FUZZ_RUNS=${runs}`)
      }).pipe(
        // The server's own fibers (actors retrying, say) log at error level only, like its requests.
        Logger.withMinimumLogLevel(LogLevel.Error)
      ),
    { timeout: 600_000 }
  )

  it.scopedLive(
    "a signed-in owner's session at the member and invitation routes: never a 500, never a hang",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ logLevel: "error" })
        const owner = yield* server.bootstrap("fuzz@example.com")
        const browser = yield* signIn(server, "fuzz@example.com")
        const org = owner.organization_id
        const admin = yield* joined(server, browser, org, "admin@example.com", "admin")
        const member = yield* joined(server, browser, org, "member@example.com", "member")
        const pending = yield* invite(server, browser, org, "pending@example.com", "operator")
        const ids = [org, owner.user_id, admin.userId, member.userId, pending.invitation.id, pending.token]
        // Deleting the organization would leave every later request a 404: its own tests cover it.
        const only = (route: Route) =>
          /^(members|invitations)\./.test(route.name) && route.name !== "members.deleteOrganization"
        const session = { cookie: browser.jar.header(), csrf: browser.csrf }
        const { failures, seconds, statuses } = yield* fuzz(
          server.url,
          requests({ key: owner.api_key, orgId: org, ids, session, routes: routes.filter(only) }),
          sessionRuns
        )
        console.log(
          `fuzz sessions (FUZZ_SEED=${seed}): ${sessionRuns} requests in ${seconds.toFixed(1)} s; statuses ${
            statusLine(statuses)
          }`
        )
        // The valid bodies reached the services, not only the door.
        assert.isAbove([...statuses].filter(([status]) => status < 300).reduce((n, [, count]) => n + count, 0), 0)
        assert.deepStrictEqual(failures, [], `replay with FUZZ_SEED=${seed} FUZZ_SESSION_RUNS=${sessionRuns}`)
      }).pipe(Logger.withMinimumLogLevel(LogLevel.Error)),
    { timeout: 600_000 }
  )
})

/**
 * The sign-in and device routes with what a browser sends: a real session cookie and CSRF token
 * (now and then a wrong one), an organization header, real device and user codes among the values.
 * Besides never a 500: every token error is in RFC 8628's shape, every other error problem details.
 */
describe("fuzz: sign-in and device routes with a browser session", () => {
  const signInRuns = Number(process.env["FUZZ_SIGNIN_RUNS"] ?? 1_500)
  const selected = routes
    .filter((route) => /^(auth|device)\./.test(route.name) && route.name !== "auth.logout")
    .map((route) => route.name === "device.token" ? { ...route, fields: [...deviceTokenMembers] } : route)

  it.scopedLive(
    "generated bodies, queries and headers: never a 500, always the route's error shape",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ logLevel: "error" })
        const browser = yield* signIn(server, "fuzz@example.com")
        const me = yield* browser.http("GET", "/v1/me")
        const orgId: string = me.body.organizations[0].id
        const codes = yield* Effect.forEach(
          [1, 2, 3],
          () => Effect.map(httpRequest(server.url, "POST", "/v1/auth/device/code", { json: {} }), (reply) => reply.body)
        )
        const ids = [
          orgId,
          ...codes.flatMap((code) => [code.device_code, code.user_code]),
          "urn:ietf:params:oauth:grant-type:device_code",
          "fuzz@example.com",
          "0190d9a2-0000-7000-8000-000000000001"
        ]
        const cookie = browser.jar.header()
        const headers = fc.record({
          cookie: fc.oneof(
            { weight: 8, arbitrary: fc.constant(cookie) },
            { weight: 1, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((s) => `svc_session=${encode(s)}`) }
          ),
          "x-csrf-token": fc.oneof(
            { weight: 8, arbitrary: fc.constant(browser.csrf) },
            { weight: 1, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((s) => s.trim()) }
          ),
          "x-organization-id": fc.option(fc.oneof(fc.constant(orgId), fc.uuid(), fc.string({ maxLength: 20 })), {
            nil: undefined,
            freq: 4
          }),
          "content-type": fc.oneof(
            { weight: 8, arbitrary: fc.constant("application/json") },
            { weight: 1, arbitrary: fc.constantFrom(undefined, "text/plain", "application/x-www-form-urlencoded") }
          )
        }, { requiredKeys: [] })
        const failures: Array<string> = []
        const statuses = new Map<string, number>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(requests({ key: "", orgId, ids, routes: selected, headers }), async (generated) => {
              const answer = await send(server.url, generated).catch((error: Error) => {
                failures.push(error.message)
                return undefined
              })
              if (answer !== undefined) {
                const key = `${generated.route} ${answer.status}`
                statuses.set(key, (statuses.get(key) ?? 0) + 1)
              }
              // 431: Node's own answer to headers (a huge query) larger than it reads, before svc sees them.
              if (answer === undefined || answer.status < 400 || answer.status === 431) return true
              if (answer.status === 500) failures.push(`500: ${show(generated)} -> ${answer.text.slice(0, 200)}`)
              else if (generated.route === "device.token" && answer.status === 400) {
                const body = JSON.parse(answer.text) as Record<string, unknown>
                if (Object.keys(body).sort().join() !== "error,error_description") {
                  failures.push(`token error not in RFC shape: ${show(generated)} -> ${answer.text.slice(0, 200)}`)
                }
              } else if (!/"code":"[a-z_]+"/.test(answer.text)) {
                failures.push(
                  `not problem details: ${show(generated)} -> ${answer.status} ${answer.text.slice(0, 200)}`
                )
              }
              return failures.length < 20
            }),
            { numRuns: signInRuns, seed, endOnFailure: true }
          ).catch((error: Error) => {
            failures.push(error.message.split("\n").slice(0, 2).join(" "))
          })
        )
        console.log(`sign-in fuzz (FUZZ_SEED=${seed}): ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`)
        assert.deepStrictEqual(failures, [], `replay with FUZZ_SEED=${seed} FUZZ_SIGNIN_RUNS=${signInRuns}`)
      }).pipe(Logger.withMinimumLogLevel(LogLevel.Error)),
    { timeout: 300_000 }
  )

  it.scopedLive(
    "billing metered with payments: every billing and operator billing body, never a 500 or a hang, the ledger adds up",
    () =>
      Effect.gen(function*() {
        const stripe = yield* startStripeServer
        const server = yield* startServer({
          logLevel: "error",
          billing: "metered",
          payments: Option.some("stripe"),
          stripe: stripeSettings(stripe, 2),
          operatorToken: Option.some(Redacted.make(operatorToken))
        })
        const owner = yield* server.bootstrap("fuzz@example.com")
        const billingRoutes = routes.filter((route) => route.name.startsWith("billing.") || route.name === "limits.get")
        const ids = [owner.organization_id, "0190d9a2-0000-7000-8000-000000000001"]
        const failures: Array<string> = []
        const statuses = new Map<number, number>()
        const billingRuns = Math.max(200, Math.floor(runs / 5))
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              requests({ key: owner.api_key, orgId: owner.organization_id, ids, routes: billingRoutes }),
              async (request) => {
                const answer = await send(server.url, request).catch((error: Error) => {
                  failures.push(error.message)
                  return undefined
                })
                if (answer === undefined) return false
                statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
                if (answer.status === 500 && failures.length < 50) {
                  failures.push(`500: ${show(request)} -> ${answer.text.slice(0, 200)}`)
                }
                return true
              }
            ),
            { numRuns: billingRuns, seed, endOnFailure: true }
          ).catch((error: Error) => {
            failures.push(error.message.split("\n").slice(0, 2).join(" "))
          })
        )
        console.log(
          `billing fuzz (FUZZ_SEED=${seed}): ${billingRuns} requests; statuses ${
            JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))
          }`
        )
        // Whatever was accepted, each balance still equals the sum of its ledger rows.
        const db = new Database(server.config.databaseFile, { readonly: true })
        const account = db.prepare("SELECT * FROM billing_accounts WHERE organization_id = ?").get(
          owner.organization_id
        ) as Record<string, number>
        for (const balance of ["trial", "plan", "credit"]) {
          const sum = db.prepare(
            "SELECT COALESCE(SUM(amount_micros), 0) AS total FROM billing_ledger " +
              "WHERE organization_id = ? AND balance = ?"
          ).get(owner.organization_id, balance) as { total: number }
          assert.strictEqual(sum.total, account[`${balance}_micros`], balance)
        }
        db.close()
        assert.deepStrictEqual(failures, [], `replay with FUZZ_SEED=${seed} FUZZ_RUNS=${runs}`)
      }).pipe(Logger.withMinimumLogLevel(LogLevel.Error)),
    { timeout: 600_000 }
  )
})

describe("fuzz: the terminal WebSocket", () => {
  it.scopedLive(
    "generated tickets never open or break anything; generated frames never end the terminal",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ runtime: "sandbox", logLevel: "error" })
        const owner = yield* server.bootstrap("fuzz@example.com")
        const api = client(server.url, { key: owner.api_key })
        const id = yield* runningMachine(api, "fuzz-terminal", { internet_access: false })
        const made = (yield* api("POST", `/v1/machines/${id}/terminals`, { json: { command: ["cat"] } })).body
        const base = made.url.slice(0, made.url.indexOf("?"))
        // Tickets and queries of every shape: a refusal (404 or 422), never a 500 nor an open socket.
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.oneof(fc.string(), fc.base64String(), fc.constant("")), async (ticket) => {
              const opened = await Effect.runPromise(openTerminal(`${base}?ticket=${encodeURIComponent(ticket)}`))
              return "refused" in opened && opened.refused === 404
            }),
            { numRuns: Math.min(runs, 200), seed }
          )
        )
        // The real ticket still opens its terminal: none of the above used it.
        const terminal = yield* mustOpen(made.url)
        const frames = fc.oneof(
          // Bytes, without the keys that would end or freeze cat (^C ^D ^Z ^\\ ^S).
          fc.uint8Array({ maxLength: 64 }).map((bytes) => ({
            binary: true,
            data: Buffer.from(bytes.filter((byte) => ![3, 4, 26, 28, 19].includes(byte & 0x7f)))
          })),
          fc.oneof(
            fc.string(),
            jsonValue(fc.constant("x")).map((value) => JSON.stringify(value)),
            fc.record({ type: fc.constant("resize"), cols: anyNumber, rows: anyNumber }).map((v) => JSON.stringify(v))
          ).map((text) => ({ binary: false, data: Buffer.from(text) }))
        )
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(frames, async (frame) => {
              terminal.ws.send(frame.data, { binary: frame.binary })
              return terminal.ws.readyState === terminal.ws.OPEN
            }),
            { numRuns: Math.min(runs, 500), seed }
          )
        )
        // Still the same live terminal: a line typed now comes back.
        const before = terminal.screen().length
        yield* terminal.type("\x15still-alive\r")
        yield* terminal.waitFor("still-alive\r\n", before)
        yield* terminal.type("\x03")
        assert.strictEqual(yield* terminal.closed, 1000)
      }),
    { timeout: 120_000 }
  )
})
