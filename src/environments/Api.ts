/** Environments (extensions.md §6): versioned, write-only variables for machines. */
import { HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { SecretsUnavailable } from "../kernel/crypto/SecretBox.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { MachineString, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { AcceptedChange } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"
import { EnvironmentInUse } from "./Errors.js"

const VariableName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: () => "a variable name like API_TOKEN" })
)
/** A value goes into the machine's processes as `NAME=value`: no NUL byte. */
const VariableValue = MachineString.pipe(Schema.maxLength(64 * 1024))
const EnvironmentName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))
const maxVariables = 200

export const EnvironmentDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  name: Schema.String,
  version: Schema.Int,
  variable_names: Schema.Array(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Environment" })

const CreateEnvironmentRequest = RequestBody({
  name: EnvironmentName,
  variables: Schema.optionalWith(
    Schema.Record({ key: VariableName, value: VariableValue }).pipe(
      Schema.filter((record) => Object.keys(record).length <= maxVariables || `at most ${maxVariables} variables`)
    ),
    { default: () => ({}) }
  )
})

const PatchEnvironmentRequest = RequestBody({
  name: Schema.optional(EnvironmentName),
  variables: Schema.optional(
    Schema.Record({ key: VariableName, value: Schema.NullOr(VariableValue) }).pipe(
      Schema.filter((record) => Object.keys(record).length <= maxVariables || `at most ${maxVariables} variables`)
    )
  )
})

const EnvironmentPath = Schema.Struct({ id: Uuid })

export class EnvironmentsApi extends HttpApiGroup.make("environments")
  .add(
    Endpoint.get("list", "/v1/environments", { policy: policy("F", "header") })
      .addSuccess(Schema.Struct({ items: Schema.Array(EnvironmentDto) }))
  )
  .add(
    Endpoint.post("create", "/v1/environments", { policy: policy("F", "header"), errors: [SecretsUnavailable] })
      .setPayload(CreateEnvironmentRequest)
      .addSuccess(EnvironmentDto, { status: 201 })
  )
  .add(
    Endpoint.get("get", "/v1/environments/:id", { policy: policy("F", "header"), errors: [ResourceNotFound] })
      .setPath(EnvironmentPath)
      .addSuccess(EnvironmentDto)
  )
  .add(
    Endpoint.patch("update", "/v1/environments/:id", {
      policy: policy("F", "header"),
      errors: [ResourceNotFound, SecretsUnavailable]
    })
      .setPath(EnvironmentPath)
      .setPayload(PatchEnvironmentRequest)
      .addSuccess(EnvironmentDto)
  )
  .add(
    Endpoint.del("delete", "/v1/environments/:id", {
      policy: policy("F", "header"),
      errors: [ResourceNotFound, EnvironmentInUse]
    })
      .setPath(EnvironmentPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    Endpoint.post("upgrade", "/v1/environments/:id/upgrade", {
      policy: policy("U", "header"),
      errors: [ResourceNotFound]
    })
      .setPath(EnvironmentPath)
      .addSuccess(Schema.Struct({ operations: Schema.Array(AcceptedChange) }), { status: 202 })
  )
  .middleware(Authorization)
{}
