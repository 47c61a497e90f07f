/**
 * Environments (extensions.md §6): versioned variables for machines, sealed at rest and never
 * returned. Every change makes a new version; machines keep booting with the version they are on
 * until `upgrade` accepts an `apply_environment` operation for each of them.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import type { Accepted } from "../kernel/http/Dto.js"
import { InvalidRequest, ResourceNotFound } from "../kernel/http/Errors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { type Requester } from "../kernel/sql/Idempotency.js"
import { IdempotencyKeysRepo } from "../kernel/sql/IdempotencyKeysRepo.js"
import { Machines } from "../machines/Machines.js"
import { maxVariables } from "./Bounds.js"
import { EnvironmentInUse } from "./Errors.js"
import { type EnvironmentRow, EnvironmentsRepo } from "./Repo.js"
import { makeMachineEnvironments, type Variables } from "./Variables.js"

const notFound = new ResourceNotFound({ detail: "Environment not found" })

const make = Effect.gen(function*() {
  const repo = yield* EnvironmentsRepo
  const box = yield* SecretBox
  const commit = yield* GroupCommit
  const machines = yield* Machines
  const keys = yield* IdempotencyKeysRepo

  const find = (organizationId: string, id: string) =>
    Effect.flatMap(
      repo.findIn(organizationId, id),
      Option.match({ onNone: () => Effect.fail(notFound), onSome: Effect.succeed })
    )

  const machineEnvironments = yield* makeMachineEnvironments
  const current = (row: EnvironmentRow) => machineEnvironments.variables(row.id, row.version)

  return {
    find,
    list: repo.list,
    create: (organizationId: string, body: { readonly name: string; readonly variables: Variables }) =>
      Effect.gen(function*() {
        const sealed = yield* box.seal(JSON.stringify(body.variables))
        const now = yield* Clock.currentTimeMillis
        const row: EnvironmentRow = {
          id: uuidv7(),
          organization_id: organizationId,
          name: body.name,
          version: 1,
          variable_names: JSON.stringify(Object.keys(body.variables).sort()),
          created_at: now,
          updated_at: now,
          deleted_at: null
        }
        yield* commit.transaction(Effect.zipRight(repo.insert(row), repo.insertVersion(row.id, 1, sealed, now)))
        return row
      }),
    /** Merges `variables` (null removes one); any change makes a new version. */
    patch: (
      organizationId: string,
      id: string,
      body: {
        readonly name?: string | undefined
        readonly variables?: Readonly<Record<string, string | null>> | undefined
      }
    ) =>
      Effect.gen(function*() {
        const row = yield* find(organizationId, id)
        const before = yield* current(row)
        const after: Record<string, string> = { ...before }
        for (const [name, value] of Object.entries(body.variables ?? {})) {
          if (value === null) delete after[name]
          else after[name] = value
        }
        // The request's own schema counts only the variables it sends; the limit is the merged set's.
        if (Object.keys(after).length > maxVariables) {
          return yield* new InvalidRequest({
            field_errors: [{ field: "variables", message: `an environment holds at most ${maxVariables} variables` }]
          })
        }
        const name = body.name ?? row.name
        const variablesChanged =
          JSON.stringify(Object.entries(after).sort()) !== JSON.stringify(Object.entries(before).sort())
        if (!variablesChanged && name === row.name) return row
        const now = yield* Clock.currentTimeMillis
        const version = row.version + 1
        const sealed = yield* box.seal(JSON.stringify(after))
        const patch = { name, version, variable_names: JSON.stringify(Object.keys(after).sort()), updated_at: now }
        yield* commit.transaction(Effect.zipRight(repo.update(id, patch), repo.insertVersion(id, version, sealed, now)))
        return { ...row, ...patch }
      }),
    remove: (organizationId: string, id: string) =>
      Effect.gen(function*() {
        yield* find(organizationId, id)
        const using = yield* machines.usingEnvironment(id)
        if (using.length > 0) {
          return yield* new EnvironmentInUse({ detail: `${using.length} live machines use this environment` })
        }
        yield* repo.update(id, { deleted_at: yield* Clock.currentTimeMillis })
      }),
    /**
     * One `apply_environment` per live machine on an older version, keyed
     * `env:<id>:v<version>:<machine id>` so a repeat replays the same operations.
     */
    upgrade: (requester: Omit<Requester, "idempotencyKey">, id: string) =>
      Effect.gen(function*() {
        const row = yield* find(requester.organizationId, id)
        const operations: Array<Accepted> = []
        for (const machine of yield* machines.usingEnvironment(id)) {
          const idempotencyKey = `env:${id}:v${row.version}:${machine.id}`
          // A machine already on this version is left alone, unless this upgrade is what brought it
          // there: then a repeat replays its operation, however fast that ran.
          if (
            (machine.environment_version ?? 0) >= row.version &&
            Option.isNone(yield* keys.find(requester.organizationId, idempotencyKey))
          ) continue
          const accepted = yield* machines.change(
            { ...requester, idempotencyKey },
            machine.id,
            "apply_environment",
            { environment_id: id, version: row.version }
          ).pipe(Effect.option) // a machine that cannot take it now (failed, deleting) is skipped
          if (Option.isSome(accepted)) operations.push(accepted.value)
        }
        return { operations }
      })
  }
})

export class Environments extends Context.Tag("svc/environments/Environments")<
  Environments,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(Environments, make)
}
