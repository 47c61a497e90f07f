/** Environments (extensions.md §6): versioned, write-only variables for machines. */
import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SecretsUnavailable } from "../kernel/crypto/SecretBox.js"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { MachineString, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { AcceptedChange } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { allowedWhileSuspended, policy } from "../kernel/http/Policy.js"
import { maxVariables } from "./Bounds.js"
import { EnvironmentInUse } from "./Errors.js"

const VariableName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: () => "a variable name like API_TOKEN" })
)
/** A value goes into the machine's processes as `NAME=value`: no NUL byte. */
const VariableValue = MachineString.pipe(Schema.maxLength(64 * 1024))
const EnvironmentName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))

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
    Endpoint.get("list", "/v1/environments", {
      summary: "List environments",
      description: "The organization's environments: names and variable names; values are write-only.",
      policy: policy("F", "header", Roles.anyMember)
    })
      .addSuccess(Schema.Struct({ items: Schema.Array(EnvironmentDto) }))
  )
  .add(
    Endpoint.post("create", "/v1/environments", {
      summary: "Create an environment",
      description: "A named, versioned set of variables for machines (`environment_id` on create), encrypted at " +
        "rest. Names like `API_TOKEN`; values hold no NUL byte, at most 64 KiB; at most 200 variables.",
      policy: policy("F", "header", Roles.anyMember),
      errors: [SecretsUnavailable]
    })
      .setPayload(CreateEnvironmentRequest)
      .addSuccess(EnvironmentDto, { status: 201 })
  )
  .add(
    Endpoint.get("get", "/v1/environments/:id", {
      summary: "Get an environment",
      description: "One environment: its version and variable names.",
      policy: policy("F", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(EnvironmentPath)
      .addSuccess(EnvironmentDto)
  )
  .add(
    Endpoint.patch("update", "/v1/environments/:id", {
      summary: "Change an environment",
      description: "Renames it or merges `variables` (a null value removes one); every change is a new `version`. " +
        "Machines get it through `upgrade`.",
      policy: policy("F", "header", Roles.anyMember),
      errors: [ResourceNotFound, SecretsUnavailable]
    })
      .setPath(EnvironmentPath)
      .setPayload(PatchEnvironmentRequest)
      .addSuccess(EnvironmentDto)
  )
  .add(
    Endpoint.del("delete", "/v1/environments/:id", {
      summary: "Delete an environment",
      description: "409 `environment_in_use` while live machines use it. Takes no body.",
      policy: policy("F", "header", Roles.anyMember),
      errors: [ResourceNotFound, EnvironmentInUse]
    })
      .setPath(EnvironmentPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    Endpoint.post("upgrade", "/v1/environments/:id/upgrade", {
      summary: "Bring machines to the environment's version",
      description: "One `apply_environment` operation per machine on an older version, each with the idempotency " +
        "key `env:<id>:v<version>:<machine_id>`, so a repeat replays them. Running processes get the new " +
        "variables from their next start. Takes no body.",
      policy: allowedWhileSuspended(policy("U", "header", Roles.machineChangers)),
      errors: [ResourceNotFound]
    })
      .setPath(EnvironmentPath)
      .addSuccess(Schema.Struct({ operations: Schema.Array(AcceptedChange) }), { status: 202 })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Environments: versioned, write-only variables for machines.")
{}
