import { HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Preset } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { NullableTimestamp, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"

export const ApiKeyDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  created_by: Uuid,
  name: Schema.String,
  prefix: Schema.String,
  last_four: Schema.String,
  preset: Preset,
  created_at: Timestamp,
  expires_at: Timestamp,
  last_used_at: NullableTimestamp,
  revoked_at: NullableTimestamp
})
export type ApiKeyDto = typeof ApiKeyDto.Type

export const CreateApiKeyRequest = RequestBody({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)),
  preset: Preset,
  expires_in_days: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 365)), { default: () => 90 })
})

export const CreatedApiKey = Schema.Struct({ api_key: ApiKeyDto, secret: Schema.String })

export const ApiKeyList = Schema.Struct({ items: Schema.Array(ApiKeyDto) })

export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(
    Endpoint.get("list", "/v1/api-keys", { policy: policy("F", "header") })
      .addSuccess(ApiKeyList)
  )
  .add(
    Endpoint.post("create", "/v1/api-keys", { policy: policy("F", "header") })
      .setPayload(CreateApiKeyRequest)
      .addSuccess(CreatedApiKey, { status: 201 })
  )
  .add(
    Endpoint.del("revoke", "/v1/api-keys/:id", { policy: policy("F", "header"), errors: [ResourceNotFound] })
      .setPath(Schema.Struct({ id: Uuid }))
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middleware(Authorization)
{}
