/**
 * Who may call each route of the API, written route by route from the published interface's role
 * lines (not read from the code): the expectation test/e2e/roles.test.ts holds the server to, what
 * test/api/roles.test.ts compares every endpoint's declaration with, and the source of docs/roles.md
 * (`npm run roles-doc`). A route missing here fails both tests, so no new route forgets its roles.
 */

export type RoleName = "owner" | "admin" | "operator" | "billing" | "member"

export const roleNames: ReadonlyArray<RoleName> = ["owner", "admin", "operator", "billing", "member"]

/** A route outside any organization: no role applies; `who` says who may call it. */
export interface Outside {
  readonly who: string
}

/** The roles of an organization-scoped route, or who may call a route outside any organization. */
export type RouteRoles = ReadonlyArray<RoleName> | Outside

const anyMember: ReadonlyArray<RoleName> = roleNames
/** api.md: "machine-changing and agent routes Owner, Admin or Operator". */
const machineChangers: ReadonlyArray<RoleName> = ["owner", "admin", "operator"]
/** api.md: "billing changes Owner or Billing". */
const billingManagers: ReadonlyArray<RoleName> = ["owner", "billing"]
/** api.md: "webhooks and invitations Owner or Admin" (and member changes). */
const administrators: ReadonlyArray<RoleName> = ["owner", "admin"]
/** api.md: "ownership transfer and organization deletion Owner". */
const owner: ReadonlyArray<RoleName> = ["owner"]

const anyone: Outside = { who: "anyone (no credential)" }
const signedIn: Outside = { who: "the signed-in user (browser session)" }
const anyCaller: Outside = { who: "the caller (key or session)" }
const operatorToken: Outside = { who: "the operator token" }

export interface Section {
  readonly area: string
  /** `METHOD /path/{param}`, as the OpenAPI document names routes. */
  readonly routes: Readonly<Record<string, RouteRoles>>
}

export const roleSections: ReadonlyArray<Section> = [
  {
    area: "Machines",
    routes: {
      "GET /v1/machines": anyMember,
      "GET /v1/machines/{id}": anyMember,
      "GET /v1/machines/{id}/stats": anyMember,
      "POST /v1/machines": machineChangers,
      "PATCH /v1/machines/{id}": machineChangers,
      "POST /v1/machines/{id}/start": machineChangers,
      "POST /v1/machines/{id}/stop": machineChangers,
      "POST /v1/machines/{id}/restart": machineChangers,
      "DELETE /v1/machines/{id}": machineChangers,
      "POST /v1/machines/{id}/fork": machineChangers,
      "POST /v1/machines/{id}/restore": machineChangers,
      "POST /v1/machines/{id}/exec": machineChangers,
      "POST /v1/machines/{id}/files/write": machineChangers,
      "POST /v1/machines/{id}/files/read": machineChangers,
      "POST /v1/machines/{id}/ssh-keys": machineChangers,
      "PUT /v1/machines/{id}/internet": machineChangers,
      "POST /v1/machines/{id}/ports": machineChangers,
      "DELETE /v1/machines/{id}/ports/{port}": machineChangers,
      "POST /v1/machines/{id}/ports/{port}/tokens": machineChangers,
      "POST /v1/machines/{id}/terminals": machineChangers
    }
  },
  {
    area: "Operations",
    routes: {
      "GET /v1/operations/{id}": anyMember,
      "GET /v1/operations/{id}/events": anyMember,
      "GET /v1/machines/{id}/operations": anyMember,
      "POST /v1/operations/{id}/cancel": machineChangers
    }
  },
  {
    area: "Agents",
    routes: {
      "POST /v1/machines/{id}/agents/prompt": machineChangers,
      "POST /v1/machines/{id}/agents/steer": machineChangers,
      "POST /v1/machines/{id}/agents/interrupt": machineChangers,
      "GET /v1/machines/{id}/agents/events": machineChangers,
      "GET /v1/machines/{id}/agents/conversations": machineChangers,
      "GET /v1/provider-models": anyMember
    }
  },
  {
    area: "Snapshots and templates",
    routes: {
      "GET /v1/machines/{id}/snapshots": anyMember,
      "GET /v1/machines/{id}/snapshots/latest": anyMember,
      "GET /v1/snapshots/{snapshot_id}": anyMember,
      "GET /v1/templates": anyMember,
      "GET /v1/templates/{template}": anyMember,
      "POST /v1/machines/{id}/snapshots": machineChangers,
      "DELETE /v1/machines/{id}/snapshots": machineChangers,
      "DELETE /v1/snapshots/{snapshot_id}": machineChangers,
      "POST /v1/snapshots/bulk-delete": machineChangers,
      "POST /v1/templates": machineChangers,
      "DELETE /v1/templates/{template}": machineChangers
    }
  },
  {
    area: "Environments",
    routes: {
      "GET /v1/environments": anyMember,
      "POST /v1/environments": anyMember,
      "GET /v1/environments/{id}": anyMember,
      "PATCH /v1/environments/{id}": anyMember,
      "DELETE /v1/environments/{id}": anyMember,
      "POST /v1/environments/{id}/upgrade": machineChangers
    }
  },
  {
    area: "Billing, usage and limits",
    routes: {
      "GET /v1/billing": anyMember,
      "GET /v1/billing/auto-refill": anyMember,
      "GET /v1/billing/invoice-preview": anyMember,
      "GET /v1/billing/ledger": anyMember,
      "GET /v1/usage": anyMember,
      "GET /v1/machines/{machine_id}/usage": anyMember,
      "GET /v1/limits": anyMember,
      "PATCH /v1/billing": billingManagers,
      "POST /v1/billing/checkout": billingManagers,
      "POST /v1/billing/portal": billingManagers,
      "POST /v1/billing/card-check": billingManagers,
      "POST /v1/billing/subscription/cancel": billingManagers,
      "POST /v1/billing/subscription/resume": billingManagers,
      "POST /v1/billing/trial/end": billingManagers,
      "PUT /v1/billing/auto-refill": billingManagers,
      "POST /v1/billing/stripe/webhook": { who: "the payment provider (signed request)" }
    }
  },
  {
    area: "Webhooks",
    routes: {
      "GET /v1/webhooks": administrators,
      "POST /v1/webhooks": administrators,
      "GET /v1/webhooks/{webhook_id}": administrators,
      "PATCH /v1/webhooks/{webhook_id}": administrators,
      "DELETE /v1/webhooks/{webhook_id}": administrators,
      "POST /v1/webhooks/{webhook_id}/rotate-secret": administrators,
      "GET /v1/webhooks/{webhook_id}/deliveries": administrators
    }
  },
  {
    area: "Members, invitations and organizations",
    routes: {
      "GET /v1/organizations/{organization_id}/members": anyMember,
      "PATCH /v1/organizations/{organization_id}/members/{user_id}": administrators,
      // Anyone may remove themselves; removing another member is for owners and admins (a rule on
      // the target, kept by the members service).
      "DELETE /v1/organizations/{organization_id}/members/{user_id}": anyMember,
      "GET /v1/organizations/{organization_id}/invitations": administrators,
      "POST /v1/organizations/{organization_id}/invitations": administrators,
      "DELETE /v1/organizations/{organization_id}/invitations/{invitation_id}": administrators,
      "POST /v1/organizations/{organization_id}/transfer": owner,
      "DELETE /v1/organizations/{organization_id}": owner,
      "GET /v1/invitations": signedIn,
      "POST /v1/invitations/accept": signedIn,
      "GET /v1/me": anyCaller,
      "PUT /v1/me/active-organization": signedIn
    }
  },
  {
    area: "API keys and device authorization",
    routes: {
      "GET /v1/api-keys": anyMember,
      "POST /v1/api-keys": anyMember,
      "DELETE /v1/api-keys/{id}": anyMember,
      "POST /v1/auth/device/code": anyone,
      "POST /v1/auth/device/token": anyone,
      "GET /v1/auth/device": signedIn,
      "POST /v1/auth/device/approve": anyMember,
      "POST /v1/auth/device/deny": anyMember
    }
  },
  {
    area: "Notifications",
    routes: {
      "GET /v1/notifications/preferences": anyMember,
      "PUT /v1/notifications/preferences": anyMember,
      "GET /v1/notifications/unsubscribe": { who: "anyone with an alert e-mail's link" },
      "POST /v1/notifications/unsubscribe": { who: "anyone with an alert e-mail's link" }
    }
  },
  {
    area: "Sign-in",
    routes: {
      "GET /v1/auth/providers": anyone,
      "GET /v1/auth/login": anyone,
      "GET /v1/auth/callback": anyone,
      "POST /v1/auth/email/start": anyone,
      "POST /v1/auth/email/verify": anyone,
      "GET /v1/auth/email/callback": anyone,
      "POST /v1/auth/link/email": signedIn,
      "POST /v1/auth/logout": signedIn
    }
  },
  {
    area: "Operator",
    routes: {
      "GET /metrics": operatorToken,
      "GET /healthz": anyone,
      "GET /readyz": anyone,
      "POST /v1/operator/organizations/{organization_id}/suspend": operatorToken,
      "POST /v1/operator/organizations/{organization_id}/resume": operatorToken,
      "GET /v1/operator/abuse-flags": operatorToken,
      "GET /v1/operator/hosts": operatorToken,
      "POST /v1/operator/abuse-flags/{flag_id}/resolve": operatorToken,
      "POST /v1/operator/billing/credits": operatorToken,
      "POST /v1/operator/billing/grants": operatorToken
    }
  }
]

/** Every route of the table, by `METHOD /path/{param}`. */
export const roleTable: ReadonlyMap<string, RouteRoles> = new Map(
  roleSections.flatMap((section) => Object.entries(section.routes))
)

export const isOutside = (roles: RouteRoles): roles is Outside => !Array.isArray(roles)

/** `METHOD /path/:param` (the HttpApi's form) as the table names it. */
export const tableKey = (method: string, path: string) => `${method} ${path.replace(/:(\w+)/g, "{$1}")}`
