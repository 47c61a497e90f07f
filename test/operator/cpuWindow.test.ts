/** The abuse guard's window rule, pure: baseline, reset under the threshold, due after a whole window. */
import { assert, describe, it } from "@effect/vitest"
import { type CpuRule, step, type Track } from "../../src/operator/CpuWindow.js"

const rule: CpuRule = { cpuPermille: 900, windowMillis: 90_000 }

/** Feeds readings 30 s apart with the CPU seconds used in each interval; answers the verdicts. */
const run = (perInterval: ReadonlyArray<number>, cpus = 1, bootOf = (_: number) => "boot-1") => {
  let track: Track | undefined
  let cpu = 0
  const verdicts: Array<ReturnType<typeof step>["due"]> = []
  for (const [index, used] of [0, ...perInterval].entries()) {
    cpu += used
    const result = step(track, { bootId: bootOf(index), cpuSeconds: cpu, at: index * 30_000, cpus }, rule)
    track = result.track
    verdicts.push(result.due)
  }
  return verdicts
}

describe("CpuWindow", () => {
  it("a machine at or above the threshold through a whole window is due, with the window's lowest sample", () => {
    const verdicts = run([30, 28, 27])
    assert.deepStrictEqual(verdicts.slice(0, 3), [undefined, undefined, undefined])
    assert.deepStrictEqual(verdicts[3], { windowStart: 0, minPermille: 900 })
  })

  it("a sample under the threshold starts the window again at its end", () => {
    const verdicts = run([30, 26, 30, 30, 30])
    assert.deepStrictEqual(verdicts.slice(0, 5), [undefined, undefined, undefined, undefined, undefined])
    assert.deepStrictEqual(verdicts[5], { windowStart: 60_000, minPermille: 1000 })
  })

  it("use is a share of the size's CPUs: one busy CPU of a two-CPU machine is 500", () => {
    assert.isTrue(run([30, 30, 30, 30], 2).every((verdict) => verdict === undefined))
    assert.deepStrictEqual(run([60, 60, 54], 2)[3], { windowStart: 0, minPermille: 900 })
  })

  it("a new boot (or a counter that went back) sets a new baseline", () => {
    const verdicts = run([30, 30, 30], 1, (index) => (index < 2 ? "boot-1" : "boot-2"))
    assert.isTrue(verdicts.every((verdict) => verdict === undefined))
  })

  it("a reading at the same instant changes nothing", () => {
    const first = step(undefined, { bootId: "b", cpuSeconds: 1, at: 0, cpus: 1 }, rule)
    const again = step(first.track, { bootId: "b", cpuSeconds: 5, at: 0, cpus: 1 }, rule)
    assert.strictEqual(again.track, first.track)
    assert.isUndefined(again.due)
  })
})
