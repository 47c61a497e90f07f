/** Content negotiation of encodings: whether a client takes a gzipped answer. */

/** Whether an Accept-Encoding header takes gzip (not refused with `q=0`). */
export const acceptsGzip = (header: string | undefined) =>
  header !== undefined && header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";")
    const q = params.map((param) => /^\s*q=([0-9.]+)\s*$/.exec(param)?.[1]).find((value) => value !== undefined)
    return (coding === "gzip" || coding === "*") && (q === undefined || Number(q) > 0)
  })
