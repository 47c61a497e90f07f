/**
 * What one run of an agent used and cost. Some agents report their session's totals rather than the
 * run's (`cumulativeUsage`): the run's is the difference from the totals kept on the conversation.
 * An agent that reports no cost is priced by the bundled catalogue.
 */
import { Effect } from "effect"
import type { AgentProviderShape } from "./providers/AgentProvider.js"
import { priced } from "./providers/Catalogue.js"
import type { AgentUsage } from "./providers/Schemas.js"

/**
 * A meter for one turn: give it each usage the agent reports, it answers the run's own, priced.
 * `totals` is the conversation's stored totals (JSON); `save` stores new ones.
 */
export const usageMeter = (
  provider: AgentProviderShape,
  model: string,
  totals: string | null,
  save: (totals: string) => Effect.Effect<void>
) => {
  let before: AgentUsage | null = totals === null ? null : JSON.parse(totals)
  return (reported: AgentUsage) =>
    Effect.gen(function*() {
      let usage = reported
      if (provider.cumulativeUsage === true) {
        const previous = before
        before = reported
        yield* save(JSON.stringify(reported))
        if (previous !== null) {
          usage = {
            input_tokens: Math.max(0, reported.input_tokens - previous.input_tokens),
            output_tokens: Math.max(0, reported.output_tokens - previous.output_tokens),
            cached_input_tokens: Math.max(0, reported.cached_input_tokens - previous.cached_input_tokens),
            cost_micro_usd: Math.max(0, reported.cost_micro_usd - previous.cost_micro_usd)
          }
        }
      }
      return usage.cost_micro_usd > 0
        ? usage
        : { ...usage, cost_micro_usd: priced(provider.key, model, usage) }
    })
}
