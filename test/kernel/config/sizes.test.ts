/** `SVC_SIZES` as `svc serve` reads it: the defaults of extensions.md §5, merged per size, malformed named. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig, layer as AppConfigFromEnv } from "../../../src/kernel/config/AppConfig.js"
import { defaultSizes, sizesOf } from "../../../src/kernel/config/MachineSizes.js"

const read = (env: Record<string, string>) =>
  Effect.flatMap(AppConfig, (config) => Effect.succeed(config)).pipe(
    Effect.provide(AppConfigFromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromJson(env))))),
    Effect.either
  )

describe("SVC_SIZES", () => {
  it.effect("unset: the sizes of extensions.md §5", () =>
    Effect.gen(function*() {
      const config = yield* read({})
      assert.isTrue(config._tag === "Right")
      if (config._tag !== "Right") return
      assert.deepStrictEqual(sizesOf(config.right), {
        small: { cpus: 1, memory_mib: 1024, disk_mib: 10240, processes: 1024 },
        default: { cpus: 2, memory_mib: 4096, disk_mib: 20480, processes: 2048 },
        large: { cpus: 4, memory_mib: 8192, disk_mib: 40960, processes: 4096 }
      })
      assert.deepStrictEqual(sizesOf({}), defaultSizes)
    }))

  it.effect("given limits are merged per size over the defaults", () =>
    Effect.gen(function*() {
      const config = yield* read({ SVC_SIZES: JSON.stringify({ small: { disk_mib: 512, processes: 64 } }) })
      assert.isTrue(config._tag === "Right")
      if (config._tag !== "Right") return
      const sizes = sizesOf(config.right)
      assert.deepStrictEqual(sizes.small, { cpus: 1, memory_mib: 1024, disk_mib: 512, processes: 64 })
      assert.deepStrictEqual(sizes.default, defaultSizes.default)
      assert.deepStrictEqual(sizes.large, defaultSizes.large)
    }))

  it.effect("a malformed value stops the start with one line naming the variable", () =>
    Effect.gen(function*() {
      for (
        const text of [
          "{",
          "[]",
          JSON.stringify({ huge: { cpus: 1 } }),
          JSON.stringify({ small: { cpus: 0.5 } }),
          JSON.stringify({ small: { disk_mib: 1 } }),
          JSON.stringify({ small: { memory: 1024 } }),
          JSON.stringify({ small: { processes: "many" } })
        ]
      ) {
        const config = yield* read({ SVC_SIZES: text })
        assert.isTrue(config._tag === "Left", text)
        if (config._tag !== "Left") continue
        const line = String(config.left)
        assert.include(line, "SVC_SIZES")
        assert.notInclude(line.trim(), "\n")
      }
    }))
})
