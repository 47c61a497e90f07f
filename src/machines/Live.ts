/** The machines area: accepting machine changes, and its worker (the auto_stop and idle_sleep timers). */
import { Layer } from "effect"
import { Machines } from "./Machines.js"
import { MachineStats } from "./Stats.js"
import * as Worker from "./Worker.js"

export const MachinesLive = Layer.merge(Worker.layer, MachineStats.layer).pipe(Layer.provideMerge(Machines.layer))
