/**
 * A run's usage (src/agents/Usage.ts): an agent that reports its session's totals is reported by
 * the difference from the conversation's stored totals, and a usage without a cost is priced.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClaudeCode } from "../../src/agents/providers/claude_code/ClaudeCode.js"
import { Codex } from "../../src/agents/providers/codex/Codex.js"
import { usageMeter } from "../../src/agents/Usage.js"

const usage = (input_tokens: number, output_tokens: number, cost_micro_usd = 0) => ({
  input_tokens,
  output_tokens,
  cached_input_tokens: 0,
  cost_micro_usd
})

describe("usage", () => {
  it.effect("session totals: each run reports the difference, and the new totals are stored", () =>
    Effect.gen(function*() {
      const saved: Array<string> = []
      const meter = usageMeter(
        Codex,
        "no-such-model",
        JSON.stringify(usage(100, 10)),
        (totals) => Effect.sync(() => void saved.push(totals))
      )
      assert.deepStrictEqual(yield* meter(usage(150, 30)), usage(50, 20))
      assert.deepStrictEqual(yield* meter(usage(160, 35)), usage(10, 5))
      assert.deepStrictEqual(saved.map((totals) => JSON.parse(totals)), [usage(150, 30), usage(160, 35)])
    }))

  it.effect("a conversation's first run reports the totals as they are", () =>
    Effect.gen(function*() {
      const meter = usageMeter(Codex, "no-such-model", null, () => Effect.void)
      assert.deepStrictEqual(yield* meter(usage(150, 30)), usage(150, 30))
    }))

  it.effect("a usage without a cost is priced by the catalogue; a reported cost is kept", () =>
    Effect.gen(function*() {
      // gpt-5: USD 1.25 per million input tokens and 10 per million output tokens.
      const codex = usageMeter(Codex, "gpt-5", null, () => Effect.void)
      assert.strictEqual((yield* codex(usage(1_000_000, 100_000))).cost_micro_usd, 2_250_000)
      const claude = usageMeter(ClaudeCode, "claude-sonnet-4-5", null, () =>
        Effect.dieMessage("claude reports per run: nothing is stored"))
      assert.deepStrictEqual(yield* claude(usage(1000, 100, 42)), usage(1000, 100, 42))
    }))
})
