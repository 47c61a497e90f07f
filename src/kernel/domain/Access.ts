/**
 * Who may call what: roles, API-key presets and the access codes of api.md (R U C F S N, plus O for
 * the operator token). Pure rules, used by the authorization middleware and by key creation.
 */
import { Schema } from "effect"

export const Role = Schema.Literal("owner", "admin", "operator", "billing", "member")
export type Role = typeof Role.Type

export const Preset = Schema.Literal("read_only", "use_existing", "create_and_use", "full_access")
export type Preset = typeof Preset.Type

const presetRank: Record<Preset, number> = { read_only: 0, use_existing: 1, create_and_use: 2, full_access: 3 }

/** A key may create or approve only keys whose preset is not above its own (extensions.md §3). */
export const presetAtMost = (preset: Preset, ceiling: Preset) => presetRank[preset] <= presetRank[ceiling]

/**
 * R: any key or a session; U: use_existing and up; C: create_and_use and up; F: full_access;
 * S: a browser session only; N: no authentication; O: the operator token only.
 */
export type AccessCode = "R" | "U" | "C" | "F" | "S" | "N" | "O"

const minimumPreset: Partial<Record<AccessCode, Preset>> = {
  R: "read_only",
  U: "use_existing",
  C: "create_and_use",
  F: "full_access"
}

export type KeyAccess = "allowed" | "session_required" | "insufficient_scope"

/** Whether an API key with `preset` may call a route with `access` (sessions pass every code but O). */
export const keyAccess = (access: AccessCode, preset: Preset): KeyAccess => {
  if (access === "S") return "session_required"
  const needed = minimumPreset[access]
  if (needed === undefined) return "allowed"
  return presetAtMost(needed, preset) ? "allowed" : "insufficient_scope"
}

/**
 * Role groups named by api.md's route requirements. Every organization-scoped route names one
 * (src/kernel/http/Policy.ts), `anyMember` included, so no route is open to all by omission.
 */
export const Roles = {
  anyMember: ["owner", "admin", "operator", "billing", "member"],
  /** Machine-changing and agent routes, snapshot and template changes, environment upgrades. */
  machineChangers: ["owner", "admin", "operator"],
  billingManagers: ["owner", "billing"],
  administrators: ["owner", "admin"],
  owner: ["owner"]
} as const satisfies Record<string, ReadonlyArray<Role>>

export const roleAllowed = (role: Role, allowed: ReadonlyArray<Role>) => allowed.includes(role)

/** Whether `allowed` lets every member in (it names all roles). */
export const everyRole = (allowed: ReadonlyArray<Role>) => Role.literals.every((role) => allowed.includes(role))

/** Methods that change state: with a session they need the CSRF token. */
export const isMutatingMethod = (method: string) => method !== "GET" && method !== "HEAD" && method !== "OPTIONS"
