/** Environments as the machine engine reads them: the environments area's answer to the MachineEnvironments port. */
import { Effect, Layer, Option } from "effect"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { MachineEnvironments, type Variables } from "../runtime/MachineEnvironments.js"
import { EnvironmentsRepo } from "./Repo.js"

export type { Variables }

export const makeMachineEnvironments = Effect.gen(function*() {
  const repo = yield* EnvironmentsRepo
  const box = yield* SecretBox
  return MachineEnvironments.of({
    current: (organizationId, environmentId) =>
      Effect.map(
        repo.findIn(organizationId, environmentId),
        Option.map((row) => ({ id: row.id, version: row.version }))
      ),
    variables: (environmentId, version) =>
      Effect.gen(function*() {
        const sealed = yield* repo.sealedVersion(environmentId, version)
        if (Option.isNone(sealed)) return {} as Variables
        return JSON.parse(yield* box.open(sealed.value)) as Variables
      })
  })
})

/** The port's layer over the environments repository (needs SecretBox and the SqlClient). */
export const MachineEnvironmentsLive = Layer.effect(MachineEnvironments, makeMachineEnvironments).pipe(
  Layer.provide(EnvironmentsRepo.layer)
)
