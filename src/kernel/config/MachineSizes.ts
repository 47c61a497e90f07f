/**
 * The machine sizes of extensions.md §5 and `SVC_SIZES`, JSON merged per size over them. A size's
 * limits are what the drivers enforce (cgroups: CPU, memory, processes; the machine's own
 * filesystem: disk) and what the abuse guard measures CPU use against.
 */
import { Config, ConfigError, Either, Option, Schema } from "effect"
import type { MachineSize } from "../domain/MachineStates.js"

export interface SizeLimits {
  readonly cpus: number
  readonly memory_mib: number
  readonly disk_mib: number
  readonly processes: number
}

export type SizeTable = Readonly<Record<MachineSize, SizeLimits>>

export const defaultSizes: SizeTable = {
  small: { cpus: 1, memory_mib: 1024, disk_mib: 10 * 1024, processes: 1024 },
  default: { cpus: 2, memory_mib: 4 * 1024, disk_mib: 20 * 1024, processes: 2048 },
  large: { cpus: 4, memory_mib: 8 * 1024, disk_mib: 40 * 1024, processes: 4096 }
}

/** The sizes a configuration holds; the defaults when it holds none (tests build configs by hand). */
export const sizesOf = (config: { readonly sizes?: SizeTable | undefined }): SizeTable => config.sizes ?? defaultSizes

/** Whole CPUs (a quota of n periods), at least 64 MiB of memory and disk (ext4's smallest useful), 16 processes. */
const LimitsOverride = Schema.partialWith(
  Schema.Struct({
    cpus: Schema.Int.pipe(Schema.between(1, 1024)),
    memory_mib: Schema.Int.pipe(Schema.between(64, 16 * 1024 * 1024)),
    disk_mib: Schema.Int.pipe(Schema.between(64, 64 * 1024 * 1024)),
    processes: Schema.Int.pipe(Schema.between(16, 4_194_304))
  }),
  { exact: true }
)

const SizesOverride = Schema.partialWith(
  Schema.Struct({ small: LimitsOverride, default: LimitsOverride, large: LimitsOverride }),
  { exact: true }
)

const usage =
  "expected JSON like {\"small\": {\"cpus\": 1, \"memory_mib\": 1024, \"disk_mib\": 10240, \"processes\": 1024}} " +
  "(sizes small, default, large; whole CPUs 1-1024, memory_mib and disk_mib at least 64, processes at least 16)"

/** Parses `SVC_SIZES` text; a malformed value is one line naming the variable. */
export const parseSizes = (text: string): Either.Either<SizeTable, ConfigError.ConfigError> => {
  const bad = Either.left(ConfigError.InvalidData(["SVC_SIZES"], usage))
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return bad
  }
  const decoded = Schema.decodeUnknownEither(SizesOverride, { onExcessProperty: "error" })(json)
  if (Either.isLeft(decoded)) return bad
  return Either.right({
    small: { ...defaultSizes.small, ...decoded.right.small },
    default: { ...defaultSizes.default, ...decoded.right.default },
    large: { ...defaultSizes.large, ...decoded.right.large }
  })
}

export const sizesSetting = Config.string("SVC_SIZES").pipe(
  Config.option,
  Config.mapOrFail((value) => Option.isNone(value) ? Either.right(defaultSizes) : parseSizes(value.value))
)
