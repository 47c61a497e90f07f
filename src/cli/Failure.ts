/**
 * How a remote command ends when it does not succeed: one line on stderr and an exit code.
 * 1: the API answered an error (its code is printed), the server could not be reached, or what was
 * asked did not happen (a failed operation, a missing file); 2: the command was called wrongly
 * (@effect/cli's own validation, or a check of ours) and nothing was sent.
 */
import { ValidationError } from "@effect/cli"
import { ParseResult, Schema } from "effect"
import { WaitTimeout } from "../client/Client.js"
import { specOf } from "../kernel/http/Problem.js"
import { BadConfigFile } from "./ConfigFile.js"

/** A wrong call found before anything was sent: exit 2. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** What was asked did not happen though every request was answered (a failed operation): exit 1 unless given. */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  message: Schema.String,
  exitCode: Schema.optionalWith(Schema.Int, { default: () => 1 })
}) {}

/**
 * An error answer read without the typed client (a stream, the device grant's routes): its status
 * and the problem body's code (or the RFC 8628 `error`).
 */
export class ApiProblem extends Schema.TaggedError<ApiProblem>()("ApiProblem", {
  status: Schema.Int,
  code: Schema.String,
  detail: Schema.String
}) {
  static fromAnswer(status: number, body: unknown) {
    const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
    const text = (value: unknown) => typeof value === "string" ? value : undefined
    return new ApiProblem({
      status,
      code: text(fields.code) ?? text(fields.error) ?? `http_${status}`,
      detail: text(fields.detail) ?? text(fields.error_description) ?? `the server answered ${status}`
    })
  }
}

export interface Ending {
  readonly exitCode: number
  /** Printed on stderr; empty when the error was printed already (@effect/cli's validation). */
  readonly lines: ReadonlyArray<string>
}

const isObject = (u: unknown): u is Record<string, any> => typeof u === "object" && u !== null

/** The ending of a remote command's failure; undefined for a failure that is not one of them (a defect). */
export const endingOf = (error: unknown): Ending | undefined => {
  if (ValidationError.isValidationError(error)) return { exitCode: 2, lines: [] }
  if (error instanceof UsageError || error instanceof BadConfigFile) {
    return { exitCode: 2, lines: [`svc: ${error.message}`] }
  }
  if (error instanceof CommandFailed) {
    return { exitCode: error.exitCode, lines: error.message === "" ? [] : [`svc: ${error.message}`] }
  }
  if (error instanceof ApiProblem) {
    return { exitCode: 1, lines: [`svc: error ${error.code} (${error.status}): ${error.detail}`] }
  }
  if (error instanceof WaitTimeout) {
    return { exitCode: 1, lines: [`svc: ${error.message} (the wait ended; the operation goes on)`] }
  }
  const spec = specOf(error)
  if (spec !== undefined && isObject(error)) {
    const fields = (error.field_errors ?? []) as ReadonlyArray<{ field: string; message: string }>
    return {
      exitCode: 1,
      lines: [
        `svc: error ${error._tag} (${spec.status}): ${error.detail ?? spec.title}`,
        ...fields.map((f) => `  ${f.field}: ${f.message}`)
      ]
    }
  }
  if (isObject(error) && error._tag === "RequestError") {
    return { exitCode: 1, lines: [`svc: cannot reach ${error.request?.url ?? "the server"}: ${causeText(error)}`] }
  }
  if (isObject(error) && error._tag === "ResponseError") {
    return {
      exitCode: 1,
      lines: [`svc: unexpected answer ${error.response?.status ?? ""} from ${error.request?.url ?? "the server"}`]
    }
  }
  // A request the client refused to encode (a value the API does not take), or an answer it could not read.
  if (isObject(error) && error._tag === "ParseError") {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error as unknown as ParseResult.ParseError)
    return {
      exitCode: 1,
      lines: ["svc: invalid request or answer:", ...issues.map((i) => `  ${i.path.join(".") || "body"}: ${i.message}`)]
    }
  }
  return undefined
}

/** The innermost system error code of a failed request (ECONNREFUSED, ENOTFOUND), else its message. */
const causeText = (error: Record<string, any>): string => {
  let message = String(error.description ?? "failed")
  for (let cause = error.cause; isObject(cause); cause = cause.cause) {
    if (typeof cause.code === "string") return cause.code
    if (typeof cause.message === "string") message = cause.message
  }
  return message
}
