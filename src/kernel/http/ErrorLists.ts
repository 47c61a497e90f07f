/**
 * The error lists several endpoints declare, each written once, and `withErrors` to add a list to
 * an endpoint in one step (each class in its wire form, in the order given):
 * `.pipe(withErrors(...acceptErrors, NameTaken))`.
 */
import type { HttpApiEndpoint } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import type { Schema } from "effect"
import { ResourceNotFound } from "./Errors.js"
import {
  IdempotencyConflict,
  MachineDeleted,
  MachineNotCreated,
  MachineNotRunning,
  MachineNotStopped,
  RuntimeUnavailable
} from "./MachineErrors.js"
import { type ProblemClass, wire } from "./Problem.js"

/** Every route that accepts work: an unknown machine, a reused key, a host that cannot run machines now. */
export const acceptErrors = [ResourceNotFound, IdempotencyConflict, RuntimeUnavailable] as const

/** A route that needs a running machine (src/domain/MachineStates.ts `conflictOf`). */
export const notRunningErrors = [MachineNotRunning, MachineNotCreated, MachineDeleted] as const

/** Every state conflict a machine change can answer. */
export const stateErrors = [...notRunningErrors, MachineNotStopped] as const

export const withErrors =
  <const Classes extends ReadonlyArray<ProblemClass<any>>>(...classes: Classes) =>
  <Name extends string, Method extends HttpMethod, Path, UrlParams, Payload, Headers, Success, Error, R, RE>(
    endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
  ): HttpApiEndpoint.HttpApiEndpoint<
    Name,
    Method,
    Path,
    UrlParams,
    Payload,
    Headers,
    Success,
    Error | Schema.Schema.Type<Classes[number]>,
    R,
    RE
  > =>
    // addError only widens the error type; the fold cannot say so type by type.
    classes.reduce((added: any, cls) => added.addError(wire(cls)), endpoint)
