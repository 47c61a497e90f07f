/**
 * The abuse guard's window rule, pure: a machine whose CPU use stayed at or above the threshold in
 * every sample through a whole window is due to be stopped. Use is measured between two readings
 * of its CPU time, in thousandths of its size's CPUs. The first reading of a boot only sets the
 * baseline; a sample under the threshold starts the window again at its end.
 */

export interface CpuRule {
  readonly cpuPermille: number
  readonly windowMillis: number
}

/** What the guard remembers of one running machine between samples. */
export interface Track {
  readonly bootId: string
  readonly cpuSeconds: number
  readonly at: number
  /** Since when every sample was at or above the threshold. */
  readonly windowStart: number
  /** The lowest sample since `windowStart` (Infinity before the first). */
  readonly minPermille: number
}

export interface Reading {
  readonly bootId: string
  readonly cpuSeconds: number
  readonly at: number
  readonly cpus: number
}

export interface Due {
  readonly windowStart: number
  readonly minPermille: number
}

export const step = (
  track: Track | undefined,
  reading: Reading,
  rule: CpuRule
): { readonly track: Track; readonly due: Due | undefined } => {
  if (track === undefined || track.bootId !== reading.bootId || reading.cpuSeconds < track.cpuSeconds) {
    const fresh = { ...baseline(reading), windowStart: reading.at, minPermille: Infinity }
    return { track: fresh, due: undefined }
  }
  const elapsed = reading.at - track.at
  if (elapsed <= 0) return { track, due: undefined }
  const permille = Math.floor(((reading.cpuSeconds - track.cpuSeconds) * 1_000_000) / (elapsed * reading.cpus))
  const next: Track = permille >= rule.cpuPermille
    ? { ...baseline(reading), windowStart: track.windowStart, minPermille: Math.min(track.minPermille, permille) }
    : { ...baseline(reading), windowStart: reading.at, minPermille: Infinity }
  const due = permille >= rule.cpuPermille && reading.at - next.windowStart >= rule.windowMillis
    ? { windowStart: next.windowStart, minPermille: next.minPermille }
    : undefined
  return { track: next, due }
}

const baseline = (reading: Reading) => ({ bootId: reading.bootId, cpuSeconds: reading.cpuSeconds, at: reading.at })
