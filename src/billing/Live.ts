/**
 * The billing area: its reads and settings, purchases through the Payments port (Stripe or none),
 * the meter and its worker. The accounts and the kernel's Entitlements port come from
 * `AccountsLive` (src/billing/Accounts.ts), built in the kernel's layer so every area sees one.
 */
import { Layer } from "effect"
import { Billing } from "./Billing.js"
import { ChargeRepo } from "./ChargeRepo.js"
import { Meter } from "./Meter.js"
import { MeterRepo } from "./MeterRepo.js"
import { Purchases } from "./Purchases.js"
import { BillingRepo } from "./Repo.js"
import * as StripePayments from "./StripePayments.js"
import { BillingWorker } from "./Worker.js"

export { AccountsLive } from "./Accounts.js"

export const BillingLive = BillingWorker.layer.pipe(
  Layer.provideMerge(Purchases.layer),
  Layer.provideMerge(Layer.merge(Billing.layer, Meter.layer)),
  Layer.provide(Layer.mergeAll(BillingRepo.layer, MeterRepo.layer, ChargeRepo.layer, StripePayments.layer))
)
