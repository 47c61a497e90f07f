/** svc's version: what `svc --version` prints and each node records in its host's row. */
export const svcVersion = "0.1.0"
