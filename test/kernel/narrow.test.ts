/**
 * A layer built with only the services it names (src/kernel/Narrow.ts): what it captures holds
 * those and nothing else of its surroundings, and a layer it shares with the rest of the app is
 * still built once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Ref } from "effect"
import { buildWithOnly } from "../../src/kernel/Narrow.js"

class Used extends Context.Tag("test/Used")<Used, string>() {}
class Unused extends Context.Tag("test/Unused")<Unused, string>() {}
class Captured extends Context.Tag("test/Captured")<Captured, Context.Context<never>>() {}
class Shared extends Context.Tag("test/Shared")<Shared, number>() {}

describe("buildWithOnly", () => {
  it.scoped("the layer sees only the services named, and a shared layer is built once", () =>
    Effect.gen(function*() {
      const builds = yield* Ref.make(0)
      const SharedLive = Layer.effect(Shared, Ref.updateAndGet(builds, (n) => n + 1))
      // Captures its whole build context, as HttpApiBuilder.group does.
      const capturing = Layer.effect(
        Captured,
        Effect.map(Effect.context<Used>(), (context) => context as Context.Context<never>)
      ).pipe(Layer.provideMerge(SharedLive))
      const app = Layer.mergeAll(capturing.pipe(buildWithOnly(Used)), SharedLive).pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(Used, "used"), Layer.succeed(Unused, "unused")))
      )
      const context = yield* Layer.build(app)
      const captured = Context.get(context, Captured)
      assert.strictEqual(Context.get(captured as Context.Context<Used>, Used), "used")
      assert.isTrue(Option.isNone(Context.getOption(captured as Context.Context<Unused>, Unused)))
      assert.strictEqual(Context.get(context, Shared), 1)
      assert.strictEqual(yield* Ref.get(builds), 1)
    }))
})
