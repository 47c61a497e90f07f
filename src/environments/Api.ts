/** Environments (extensions.md §6): versioned, write-only variables for machines. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { SecretsUnavailable } from "../kernel/crypto/SecretBox.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { Policy, policy } from "../kernel/http/Policy.js"
import { problem, ProblemFields, wire } from "../kernel/http/Problem.js"
import { AcceptedChange } from "../machines/Api.js"

export class EnvironmentInUse extends Schema.TaggedError<EnvironmentInUse>()(
  "environment_in_use",
  ProblemFields,
  problem(409, "Environment in use")
) {}

const VariableName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: () => "a variable name like API_TOKEN" })
)
const VariableValue = Schema.String.pipe(Schema.maxLength(64 * 1024))
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
    HttpApiEndpoint.get("list", "/v1/environments")
      .addSuccess(Schema.Struct({ items: Schema.Array(EnvironmentDto) }))
      .annotate(Policy, policy("F", "header"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/environments")
      .setPayload(CreateEnvironmentRequest)
      .addSuccess(EnvironmentDto, { status: 201 })
      .addError(wire(SecretsUnavailable))
      .annotate(Policy, policy("F", "header"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/environments/:id")
      .setPath(EnvironmentPath)
      .addSuccess(EnvironmentDto)
      .addError(wire(ResourceNotFound))
      .annotate(Policy, policy("F", "header"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/environments/:id")
      .setPath(EnvironmentPath)
      .setPayload(PatchEnvironmentRequest)
      .addSuccess(EnvironmentDto)
      .addError(wire(ResourceNotFound))
      .addError(wire(SecretsUnavailable))
      .annotate(Policy, policy("F", "header"))
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/environments/:id")
      .setPath(EnvironmentPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(wire(ResourceNotFound))
      .addError(wire(EnvironmentInUse))
      .annotate(Policy, policy("F", "header"))
  )
  .add(
    HttpApiEndpoint.post("upgrade", "/v1/environments/:id/upgrade")
      .setPath(EnvironmentPath)
      .addSuccess(Schema.Struct({ operations: Schema.Array(AcceptedChange) }), { status: 202 })
      .addError(wire(ResourceNotFound))
      .annotate(Policy, policy("U", "header"))
  )
  .middleware(Authorization)
{}
