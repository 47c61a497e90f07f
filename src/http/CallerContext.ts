/** Reading the Caller inside handlers whose policy guarantees a user (and an organization). */
import { Effect, Option } from "effect"
import { Caller } from "../api/Authorization.js"

export const currentUser = Effect.map(Caller, (caller) => Option.getOrThrow(caller.user))

export const currentOrganization = Effect.map(Caller, (caller) => Option.getOrThrow(caller.organization))

export const currentCredential = Effect.map(Caller, (caller) => Option.getOrThrow(caller.credential))
