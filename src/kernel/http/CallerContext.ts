/** Reading the Caller inside handlers whose policy guarantees a user (and an organization). */
import { Effect, Option } from "effect"
import { idempotencyKeyOf, type Requester } from "../sql/Idempotency.js"
import { Caller } from "./Authorization.js"

export const currentUser = Effect.map(Caller, (caller) => Option.getOrThrow(caller.user))

export const currentOrganization = Effect.map(Caller, (caller) => Option.getOrThrow(caller.organization))

export const currentCredential = Effect.map(Caller, (caller) => Option.getOrThrow(caller.credential))

/**
 * Who asks for a change, in which organization, under which `Idempotency-Key` ([IDEM] routes).
 * One read of the Caller: every accept runs this.
 */
export const requester = (headers: { readonly "idempotency-key"?: string | undefined }) =>
  Effect.map(Caller, (caller): Requester => ({
    organizationId: Option.getOrThrow(caller.organization).id,
    userId: Option.getOrThrow(caller.user).id,
    idempotencyKey: idempotencyKeyOf(headers["idempotency-key"])
  }))
