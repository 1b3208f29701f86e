/**
 * How free worker slots are shared between hooks (docs/callers.md, "Per-hook limits"), the same for
 * every driver: the drivers read, for each run source (`hook:agent`,
 * `hook:<name>`, …), its runs running now and its oldest claimable heads; this
 * decides which heads to claim.
 *
 * Each free slot goes to the source with the fewest runs running (across all
 * replicas, as the store counts them), the oldest head first on a tie, skipping
 * sources at their cap. So a flood on one hook never holds another hook's run
 * back for longer than it takes one slot to free up: the other hook has fewer
 * running and wins that slot. Within a source, heads are taken oldest first, and
 * only heads are candidates, so runs sharing a session key still run in order.
 */

/** The cap on running runs of a source (`maxConcurrentRuns`), or undefined for none. */
export type RunCaps = (source: string) => number | undefined;

export const noCaps: RunCaps = () => undefined;

export interface SourceHeads<T> {
  source: string;
  /** Claimable heads of this source, oldest first. */
  heads: readonly T[];
}

/**
 * Picks up to `limit` heads from `candidates`, in the order they should be
 * claimed. `running` counts the runs executing now per source; `seqOf` orders
 * heads by age for ties.
 */
export function pickFairly<T>(
  candidates: readonly SourceHeads<T>[],
  running: ReadonlyMap<string, number>,
  caps: RunCaps,
  limit: number,
  seqOf: (head: T) => number,
): T[] {
  const lanes = candidates
    .map(({ source, heads }) => ({
      heads,
      next: 0,
      running: running.get(source) ?? 0,
      cap: caps(source) ?? Number.POSITIVE_INFINITY,
    }))
    .filter((lane) => lane.heads.length > 0 && lane.running < lane.cap);
  const picked: T[] = [];
  while (picked.length < limit) {
    let best: (typeof lanes)[number] | undefined;
    for (const lane of lanes) {
      if (lane.next >= lane.heads.length || lane.running >= lane.cap) continue;
      if (
        best === undefined ||
        lane.running < best.running ||
        (lane.running === best.running &&
          seqOf(lane.heads[lane.next] as T) < seqOf(best.heads[best.next] as T))
      ) {
        best = lane;
      }
    }
    if (best === undefined) break;
    picked.push(best.heads[best.next] as T);
    best.next++;
    best.running++;
  }
  return picked;
}

/**
 * The distinct sources among run heads, read as a loose index scan over
 * `run_heads (source, seq)`: one index probe per source, however many heads a
 * flooded source has. The same SQL on SQLite and PostgreSQL.
 */
export const HEAD_SOURCES_CTE = `
  WITH RECURSIVE sources(source) AS (
    SELECT MIN(source) FROM run_heads
    UNION ALL
    SELECT (SELECT MIN(h.source) FROM run_heads h WHERE h.source > sources.source)
      FROM sources WHERE sources.source IS NOT NULL)`;

export const HEAD_SOURCES_SQL = `${HEAD_SOURCES_CTE}
  SELECT source FROM sources WHERE source IS NOT NULL`;
