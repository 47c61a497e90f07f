/**
 * The svc HTTP API: shared by the server (src/http) and the typed client (HttpApiClient) that
 * programs embedding svc and the CLI use.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { AgentsApi } from "./agents/Api.js"
import { EnvironmentsApi } from "./environments/Api.js"
import { ApiKeysApi, AuthApi } from "./identity/Api.js"
import { LimitsApi } from "./limits/Api.js"
import { MachinesApi } from "./machines/Api.js"
import { OperationsApi } from "./operations/Api.js"
import { MembersApi } from "./organizations/Api.js"
import { SnapshotsApi } from "./snapshots/Api.js"
import { WebhooksApi } from "./webhooks/Api.js"

export class Api extends HttpApi.make("svc")
  .add(AuthApi)
  .add(ApiKeysApi)
  .add(MembersApi)
  .add(MachinesApi)
  .add(OperationsApi)
  .add(LimitsApi)
  .add(EnvironmentsApi)
  .add(SnapshotsApi)
  .add(AgentsApi)
  .add(WebhooksApi)
  .annotate(OpenApi.Title, "svc")
  .annotate(OpenApi.Description, "Self-hosted machine service: isolated machines and coding agents for organizations.")
{}
