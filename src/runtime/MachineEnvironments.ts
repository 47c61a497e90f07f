/**
 * The port the machine engine reads environments through (a machine boots with its environment's
 * variables at the version it was given); the environments area answers it.
 */
import { Context, type Effect, type Option } from "effect"

export type Variables = Readonly<Record<string, string>>

export class MachineEnvironments extends Context.Tag("svc/runtime/MachineEnvironments")<MachineEnvironments, {
  /** The live environment `environmentId` of the organization, with its current version. */
  readonly current: (
    organizationId: string,
    environmentId: string
  ) => Effect.Effect<Option.Option<{ readonly id: string; readonly version: number }>>
  /** The variables of `environmentId` at `version`: what a machine on that version boots with. */
  readonly variables: (environmentId: string, version: number) => Effect.Effect<Variables>
}>() {}
