/**
 * The model catalogue shipped with svc (`source: "bundled"`): the models each agent accepts, as
 * their own documentation lists them at the versions svc installs. Any other model id is passed to
 * the agent as given (it answers for itself when it does not know one).
 */
import type { AgentProvider, ReasoningEffort } from "./Schemas.js"

export interface CatalogueModel {
  readonly id: string
  readonly name: string
  readonly provider: string
  readonly attachments: boolean
  readonly reasoning: boolean
  readonly context_tokens: number
  readonly release_date: string
  /** USD per million tokens: input, cached input, output (for agents that report no cost). */
  readonly prices?: readonly [number, number, number]
}

const anthropic: ReadonlyArray<CatalogueModel> = [
  {
    id: "claude-sonnet-4-5",
    name: "Claude Sonnet 4.5",
    provider: "anthropic",
    attachments: true,
    reasoning: true,
    context_tokens: 200_000,
    release_date: "2025-09-29"
  },
  {
    id: "claude-opus-4-1",
    name: "Claude Opus 4.1",
    provider: "anthropic",
    attachments: true,
    reasoning: true,
    context_tokens: 200_000,
    release_date: "2025-08-05"
  },
  {
    id: "claude-haiku-4-5",
    name: "Claude Haiku 4.5",
    provider: "anthropic",
    attachments: true,
    reasoning: true,
    context_tokens: 200_000,
    release_date: "2025-10-15"
  }
]

const openai: ReadonlyArray<CatalogueModel> = [
  {
    id: "gpt-5-codex",
    name: "GPT-5 Codex",
    provider: "openai",
    attachments: true,
    reasoning: true,
    context_tokens: 400_000,
    release_date: "2025-09-15",
    prices: [1.25, 0.125, 10]
  },
  {
    id: "gpt-5",
    name: "GPT-5",
    provider: "openai",
    attachments: true,
    reasoning: true,
    context_tokens: 400_000,
    release_date: "2025-08-07",
    prices: [1.25, 0.125, 10]
  },
  {
    id: "gpt-5-mini",
    name: "GPT-5 mini",
    provider: "openai",
    attachments: true,
    reasoning: true,
    context_tokens: 400_000,
    release_date: "2025-08-07",
    prices: [0.25, 0.025, 2]
  }
]

export const catalogue: Record<
  AgentProvider,
  { readonly reasoningEfforts: ReadonlyArray<ReasoningEffort>; readonly models: ReadonlyArray<CatalogueModel> }
> = {
  claude_code: { reasoningEfforts: ["low", "medium", "high"], models: anthropic },
  codex: { reasoningEfforts: ["minimal", "low", "medium", "high"], models: openai },
  // opencode names a model as <model_provider>/<model>.
  opencode: {
    reasoningEfforts: ["minimal", "low", "medium", "high"],
    models: [
      ...anthropic.map((model) => ({ ...model, id: `anthropic/${model.id}` })),
      ...openai.map((model) => ({ ...model, id: `openai/${model.id}` }))
    ]
  }
}

/** The cost of `usage` on `model` by the catalogue's prices, in micro-USD; 0 for a model it does not price. */
export const priced = (
  provider: AgentProvider,
  model: string,
  usage: { readonly input_tokens: number; readonly cached_input_tokens: number; readonly output_tokens: number }
) => {
  const prices = catalogue[provider].models.find((entry) => entry.id === model)?.prices
  if (prices === undefined) return 0
  const [input, cached, output] = prices
  const fresh = Math.max(0, usage.input_tokens - usage.cached_input_tokens)
  return Math.round(fresh * input + usage.cached_input_tokens * cached + usage.output_tokens * output)
}

/** What the catalogue tells the API (prices stay inside svc). */
export const publicModel = ({ prices: _prices, ...model }: CatalogueModel) => model
