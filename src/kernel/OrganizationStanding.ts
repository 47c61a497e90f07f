/**
 * The port asked "is this organization suspended?" by the one authentication (every organization
 * route that uses machines, src/kernel/http/Policy.ts `refusedWhileSuspended`) and by the count
 * limits inside every boot's accept transaction (so a boot racing a suspension is refused or
 * stopped, never left running). The operator area fills it; until then nobody is suspended.
 */
import { Context, Effect, Layer } from "effect"

export interface OrganizationStandingShape {
  readonly suspended: (organizationId: string) => Effect.Effect<boolean>
}

export class OrganizationStanding
  extends Context.Tag("svc/kernel/OrganizationStanding")<OrganizationStanding, OrganizationStandingShape>()
{
  static readonly none = Layer.succeed(OrganizationStanding, { suspended: () => Effect.succeed(false) })
}
