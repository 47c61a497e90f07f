/**
 * The svc HTTP API: shared by the server (src/http) and the typed client (HttpApiClient) that
 * programs embedding svc and the CLI use.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { AgentsApi } from "./agents/Api.js"
import { AlertsApi } from "./alerts/Api.js"
import { BillingApi } from "./billing/Api.js"
import { EnvironmentsApi } from "./environments/Api.js"
import { ApiKeysApi, AuthApi } from "./identity/Api.js"
import { DeviceApi } from "./identity/DeviceApi.js"
import { publishDocument } from "./kernel/http/Endpoint.js"
import { LimitsApi } from "./limits/Api.js"
import { MachinesApi } from "./machines/Api.js"
import { MetricsApi } from "./metrics/Api.js"
import { OperationsApi } from "./operations/Api.js"
import { OperatorApi } from "./operator/Api.js"
import { InvitationsApi, MembersApi } from "./organizations/Api.js"
import { PortsApi } from "./ports/Api.js"
import { SnapshotsApi } from "./snapshots/Api.js"
import { TerminalsApi } from "./terminals/Api.js"
import { WebhooksApi } from "./webhooks/Api.js"

/** The document's introduction: what holds for every route (docs/api.md starts with it). */
const description = `Self-hosted machine service: isolated machines and coding agents for organizations.
Every route is under \`/v1\`; bodies are JSON unless stated.

## Credentials

- **API key**: \`Authorization: Bearer svc_...\`. A key belongs to one organization and carries a
  preset (\`read_only\`, \`use_existing\`, \`create_and_use\`, \`full_access\`); it acts with its
  creator's current role there. A key lacking the route's preset gets 403 \`insufficient_scope\`.
- **Browser session**: cookie \`svc_session\`. Every change (POST, PUT, PATCH, DELETE) also sends
  \`X-CSRF-Token\` repeating the \`svc_csrf\` cookie; reads need only the cookie.
- **Operator token**: \`X-Svc-Operator-Token\` on operator routes, which take no other credential.

Each route's access code says which it takes: R any key or a session; U a key from
\`use_existing\` up or a session; C from \`create_and_use\` up or a session; F \`full_access\` or a
session; S a session only (a key gets 403 \`session_required\`); N none; O the operator token.
A wrong role gets 403 \`forbidden\`.

## Organization

Routes marked [ORG] act in one organization: an API key's own (an \`X-Organization-ID\` that differs
answers 403 \`organization_mismatch\`), or for a session \`X-Organization-ID\`, which a session must
send (without it: 422 \`invalid_request\`, \`field_errors\` naming \`X-Organization-ID\`). An
organization the caller does not belong to answers 404.

## Operations and idempotency

Every change to a machine is an operation: the route answers 202 at once with \`operation_url\` and
the machine changes in the background, one operation at a time per machine, in acceptance order.
Routes marked [IDEM] take an \`Idempotency-Key\` header: the same key and body answer the first
operation again without repeating the work; the same key with another body answers 409
\`idempotency_conflict\`. Retry reads freely; retry a change only with the same key and body. Clients
retry reads on connection errors, 408, 429, 502, 503 and 504, and changes only on 429 and 503,
honouring \`Retry-After\`; they wait for an operation polling every 250 ms growing to 2 s, up to 10
minutes.

## Bodies

A body is checked before anything is recorded. An unknown member is refused (422 naming it), so a
typo is never silently dropped; a route that takes no body refuses any member. A body whose members
are all optional may be left out. A route that reads a body reads JSON: a body of another media type
answers 415 \`unsupported_media_type\` (a body without a \`Content-Type\` is read as JSON). A query
parameter the route does not declare is refused as an unknown member is (422 naming it). Strings that reach a machine hold no NUL byte; a path is at most
4095 bytes with each name at most 255; one command argument, shell line, setup script or
\`NAME=value\` at most 131071 bytes.

## Errors

Errors are \`application/problem+json\`: \`{type, title, status, code, detail, field_errors?,
correlation_id?}\`. \`code\` is the error code each route lists under its statuses; a 422 has
\`invalid_request\` with \`field_errors\` (\`[{field, message}]\`, dotted paths); a 500 repeats the
\`x-correlation-id\` every response carries; a 429 carries \`Retry-After\`. A body above the
server's limit answers 413 \`body_too_large\`. A method a path does not take answers 405
\`method_not_allowed\` with \`Allow\` listing those it takes; a path nothing serves, 404
\`resource_not_found\`. A 422 quotes back at most a short prefix of a refused value.`

export class Api extends HttpApi.make("svc")
  .add(AuthApi)
  .add(DeviceApi)
  .add(ApiKeysApi)
  .add(MembersApi)
  .add(InvitationsApi)
  .add(MachinesApi)
  .add(OperationsApi)
  .add(LimitsApi)
  .add(EnvironmentsApi)
  .add(SnapshotsApi)
  .add(PortsApi)
  .add(AgentsApi)
  .add(WebhooksApi)
  .add(MetricsApi)
  .add(OperatorApi)
  .add(AlertsApi)
  .add(BillingApi)
  .add(TerminalsApi)
  .annotate(OpenApi.Title, "svc")
  .annotate(OpenApi.Version, "1")
  .annotate(OpenApi.Description, description)
  .annotate(OpenApi.Transform, publishDocument)
{}
