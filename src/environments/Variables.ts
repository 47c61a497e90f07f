/** Reading an environment version's variables: what the actors need to boot a machine. */
import { Effect, Option } from "effect"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { EnvironmentsRepo } from "./Repo.js"

export type Variables = Readonly<Record<string, string>>

/** The variables of `environmentId` at `version` (what a machine on that version boots with). */
export const variablesOf = (environmentId: string, version: number) =>
  Effect.gen(function*() {
    const repo = yield* EnvironmentsRepo
    const box = yield* SecretBox
    const sealed = yield* repo.sealedVersion(environmentId, version)
    if (Option.isNone(sealed)) return {} as Variables
    return JSON.parse(yield* box.open(sealed.value)) as Variables
  })
