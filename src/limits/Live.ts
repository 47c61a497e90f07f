/** The limits area: the count limits (no tables of its own: it counts machines and boots). */
import { Limits } from "./Limits.js"

export const LimitsLive = Limits.layer
