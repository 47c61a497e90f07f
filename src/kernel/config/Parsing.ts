/** The shape of a setting parsed from text: a value, or a ConfigError naming the variable. */
import { ConfigError, Either } from "effect"

export type Parsed<A> = Either.Either<A, ConfigError.ConfigError>
export const ok = <A>(value: A): Parsed<A> => Either.right(value)
export const bad = <A>(name: string, message: string): Parsed<A> =>
  Either.left(ConfigError.InvalidData([name], message))
