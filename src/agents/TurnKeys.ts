/**
 * The `Idempotency-Key` of the agents' accepting routes (src/kernel/sql/Idempotency.ts): a key's
 * record names the turn its prompt made, or the turn and input of its steer or interrupt.
 */
import { Effect, Option } from "effect"
import { sha256 } from "../kernel/crypto/Tokens.js"
import { canonicalJson, makeIdempotency, type Requester } from "../kernel/sql/Idempotency.js"

/** What a repeated request is compared with: the route, the machine and the body. */
export const fingerprintOf = (route: "prompt" | "steer" | "interrupt", machineId: string, body: unknown) =>
  sha256(`agents.${route} ${machineId} ${canonicalJson(body)}`)

export const makeTurnKeys = Effect.map(makeIdempotency, (idempotency) => ({
  /** The turn (and input) an earlier request with the key made; 409 when that request was another. */
  check: (requester: Requester, fingerprint: string) =>
    Effect.map(
      idempotency.previous(requester, fingerprint),
      Option.flatMap((key) =>
        key.turn_id === null ? Option.none() : Option.some({ turnId: key.turn_id, inputId: key.input_id })
      )
    ),
  /** Records the key with what the request made (inside the accept's transaction). */
  record: (requester: Requester, fingerprint: string, turnId: string, inputId: string | null, now: number) =>
    idempotency.record(requester, fingerprint, { turn_id: turnId, input_id: inputId }, now)
}))

export type TurnKeys = Effect.Effect.Success<typeof makeTurnKeys>
