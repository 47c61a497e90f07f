/**
 * SQL fragments that read the same in SQLite and PostgreSQL, where the two spell a function
 * differently (SQLite's scalar `max`/`min` of two values are PostgreSQL's `GREATEST`/`LEAST`).
 */

/** The greater of two non-null values. */
export const greatest = (a: string, b: string) => `CASE WHEN ${a} > ${b} THEN ${a} ELSE ${b} END`

/** The lesser of two non-null values. */
export const least = (a: string, b: string) => `CASE WHEN ${a} < ${b} THEN ${a} ELSE ${b} END`
