/** The operations area: reading, paging, cancelling and following operations (the engine's tables). */
import { Operations } from "./Operations.js"

export const OperationsLive = Operations.layer
