/**
 * The alert types (extensions §19): who gets each, whether it is on by default, and when it can be
 * sent at all. Billing's types are sent only when billing is metered (nothing runs out otherwise).
 */
import type { Role } from "../kernel/domain/Access.js"

export const alertTypes = [
  "operation_failed",
  "machine_stop_failed",
  "auto_stop",
  "abuse_stop",
  "billing_exhausted",
  "trial_ending"
] as const
export type AlertType = typeof alertTypes[number]

export interface AlertTypeSpec {
  readonly description: string
  readonly defaultEnabled: boolean
  /** Billing's news: only with `SVC_BILLING=metered`. */
  readonly metered: boolean
}

export const alertSpecs: Record<AlertType, AlertTypeSpec> = {
  operation_failed: {
    description: "An operation you asked for failed.",
    defaultEnabled: true,
    metered: false
  },
  machine_stop_failed: {
    description: "A stop of a machine you created failed.",
    defaultEnabled: true,
    metered: false
  },
  auto_stop: {
    description: "A machine you created was stopped by its auto-stop or idle-sleep timer.",
    defaultEnabled: false,
    metered: false
  },
  abuse_stop: {
    description: "A machine you created was stopped by the abuse guard (owners are told too).",
    defaultEnabled: true,
    metered: false
  },
  billing_exhausted: {
    description: "The organization's prepaid balance ran out (owners and billing members).",
    defaultEnabled: true,
    metered: true
  },
  trial_ending: {
    description: "The organization's trial ends in 3 days (owners and billing members).",
    defaultEnabled: true,
    metered: true
  }
}

/** Roles told of what happens to the organization as a whole (abuse stops). */
export const organizationRoles: ReadonlyArray<Role> = ["owner"]

/** Roles told of the organization's money (billing_exhausted, trial_ending). */
export const billingRoles: ReadonlyArray<Role> = ["owner", "billing"]

export const isAlertType = (text: string): text is AlertType => (alertTypes as ReadonlyArray<string>).includes(text)

/** At most one e-mail per member, type and machine in this window (extensions §19). */
export const coalesceMillis = 10 * 60_000
