/**
 * What a role may do, as the server's policy lists say (src/kernel/domain/Access.ts, compared by
 * type so the two cannot drift). Controls a role may not use are not shown; the server still decides.
 */
import type { Role, RoleLists } from "./types.js"

const machineChangers: RoleLists["machineChangers"] = ["owner", "admin", "operator"]
const administrators: RoleLists["administrators"] = ["owner", "admin"]
const owners: RoleLists["owner"] = ["owner"]
const billingManagers: RoleLists["billingManagers"] = ["owner", "billing"]

export interface Abilities {
  readonly role: Role
  /** Create, start, stop, delete, fork, snapshot, exec, files, terminals. */
  readonly changeMachines: boolean
  /** Members and invitations. */
  readonly administer: boolean
  /** Ownership transfer and organization deletion. */
  readonly own: boolean
  /** Checkout, auto-refill, billing settings. */
  readonly manageBilling: boolean
}

export const abilitiesOf = (role: Role): Abilities => ({
  role,
  changeMachines: (machineChangers as ReadonlyArray<Role>).includes(role),
  administer: (administrators as ReadonlyArray<Role>).includes(role),
  own: (owners as ReadonlyArray<Role>).includes(role),
  manageBilling: (billingManagers as ReadonlyArray<Role>).includes(role)
})
