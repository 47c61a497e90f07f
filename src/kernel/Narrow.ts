/**
 * Builds a layer in a context that holds only the services it names, instead of every service of
 * the app. HttpApiBuilder keeps a group's whole build context and merges it into every request's,
 * and Effect copies a request's whole context at each provide (the server's request, the route,
 * the caller, each transaction): with all of the app's services in it, every request copied all of
 * them several times (docs/benchmarks.md, stop 29).
 */
import { Context, Effect, Layer } from "effect"

/** `layer`, built with only `tags` of its context; the type checks that they cover all it requires. */
export const buildWithOnly =
  <const Tags extends ReadonlyArray<Context.Tag<any, any>>>(...tags: Tags) =>
  <A, E, R extends Context.Tag.Identifier<Tags[number]>>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> => {
    const pick = Context.pick(...tags)
    return Layer.scopedContext(
      Effect.flatMap(
        Effect.all([Effect.scope, Layer.CurrentMemoMap]),
        ([scope, memoMap]) =>
          Effect.mapInputContext(
            Layer.buildWithMemoMap(layer, memoMap, scope),
            (context: Context.Context<R>) => pick(context)
          )
      )
    )
  }
