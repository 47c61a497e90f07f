/** The kinds of a ledger row: shared by the API (the client reads it) and the SQL, without the SQL. */
export const ledgerKinds = [
  "trial_grant",
  "trial_forfeit",
  "usage",
  "credit_purchase",
  "credit_grant",
  "refill",
  "plan_allowance",
  "plan_expiry"
] as const
export type LedgerKind = typeof ledgerKinds[number]
