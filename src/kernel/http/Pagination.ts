/**
 * Cursor pagination, the one way every list route pages: `?limit=1..100` (default 50) and an
 * opaque `cursor`, answered as `{items, next_cursor}`. A service fetches `limit + 1` rows; the extra
 * row only says that a next page exists, named by the last returned row's cursor.
 */
import { Effect, Schema } from "effect"

/** The query fields of a list route, with the cursor's own schema (an id, a sequence number). */
export const pageFields = <Cursor extends Schema.Schema.Any>(cursor: Cursor) => ({
  limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100)), {
    default: () => 50
  }),
  cursor: Schema.optional(cursor)
})

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly next_cursor: string | null
}

/** One page of `limit` rows from `fetch(limit + 1)`, the next cursor taken from the last row kept. */
export const paginate = <Row, E, R>(
  limit: number,
  fetch: (limitPlusOne: number) => Effect.Effect<ReadonlyArray<Row>, E, R>,
  cursorOf: (row: Row) => string
): Effect.Effect<Page<Row>, E, R> =>
  Effect.map(fetch(limit + 1), (rows) => {
    const items = rows.slice(0, limit)
    return { items, next_cursor: rows.length > limit ? cursorOf(items[items.length - 1]!) : null }
  })

/** The same page with each item turned into its DTO. */
export const mapPage = <A, B>(page: Page<A>, f: (item: A) => B): Page<B> => ({
  items: page.items.map(f),
  next_cursor: page.next_cursor
})
