/** How many variables one environment holds: its request bodies count theirs, the service the merged set. */
export const maxVariables = 200
