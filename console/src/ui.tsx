/** Small shared pieces: an error line with the problem's code, a status line, empty states. */
import type { ComponentChildren } from "preact"
import type { Loaded } from "./hooks.js"

export const ErrorLine = ({ error }: { readonly error: string | undefined }) =>
  error === undefined ? null : <p class="error" role="alert">{error}</p>

export const Empty = ({ children }: { readonly children: ComponentChildren }) => <p class="empty">{children}</p>

export const StateBadge = ({ state }: { readonly state: string }) => <span class={`badge state-${state}`}>{state}</span>

export const when = (iso: string | null) => iso === null ? "—" : new Date(iso).toLocaleString()

export const decode64 = (base64: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)))

/** A table's header row: the named columns, then an unnamed one for the row's buttons. */
export const TableHead = ({ columns }: { readonly columns: ReadonlyArray<string> }) => (
  <thead>
    <tr>
      {columns.map((column) => <th key={column} scope="col">{column}</th>)}
      <th scope="col">
        <span class="visually-hidden">Actions</span>
      </th>
    </tr>
  </thead>
)

/**
 * The shape every list view shares: loading, the error in words, an empty state that says what to
 * do next, or the items. An error after a first load keeps the last items shown under it.
 */
export const Listed = <A, I>(
  { loaded, items, loading, empty, children }: {
    readonly loaded: Loaded<A>
    readonly items: (data: A) => ReadonlyArray<I>
    readonly loading: string
    readonly empty: ComponentChildren
    readonly children: (items: ReadonlyArray<I>) => ComponentChildren
  }
) => {
  const list = loaded.data === undefined ? undefined : items(loaded.data)
  return (
    <>
      <ErrorLine error={loaded.error} />
      {list === undefined
        ? loaded.error === undefined ? <p aria-busy="true" class="muted">{loading}</p> : null
        : list.length === 0
        ? <Empty>{empty}</Empty>
        : children(list)}
    </>
  )
}
