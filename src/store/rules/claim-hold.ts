/**
 * Runs a claim leaves queued, written once for both drivers (docs/agent-runs.md, "Provider
 * limits"): a run deferred until a time still ahead (`runs.not_before`), and the runs a claim's
 * `hold` names. The drivers read the SQL built here, with their own placeholders and list
 * binding (`HoldDialect`), and write a deferral's values as `deferral` gives them.
 */
import type { ClaimHold } from '../contract/runs.js';

/** The hold's lists, in the order the drivers bind them (`holdValues`). */
export const HOLD_LISTS = [
  'modelPrefixes',
  'models',
  'agentIdsWithoutModel',
  'sources',
  'tokenIds',
  'agentIds',
] as const;

export type HoldList = (typeof HOLD_LISTS)[number];

/** How a driver tests a column against one of the hold's bound lists. */
export interface HoldDialect {
  /** SQL true when `column` equals a member of `list`. */
  inList(column: string, list: HoldList): string;
  /** SQL true when `column` starts with a member of `list`. */
  hasPrefix(column: string, list: HoldList): string;
}

/** Whether the hold names any run at all: an empty one claims as no hold does. */
export function holdsAny(hold: ClaimHold | undefined): hold is ClaimHold {
  return hold !== undefined && HOLD_LISTS.some((list) => (hold[list]?.length ?? 0) > 0);
}

/** The hold's lists in `HOLD_LISTS` order, an absent one empty. */
export function holdValues(hold: ClaimHold): string[][] {
  return HOLD_LISTS.map((list) => [...(hold[list] ?? [])]);
}

/**
 * SQL true when the run `alias` (a `runs` row) is not held. `IS NOT TRUE`: a NULL column (no
 * model, no token) matches no list and does not hold the run.
 */
export function notHeldSql(alias: string, sql: HoldDialect): string {
  const held = [
    sql.hasPrefix(`${alias}.model`, 'modelPrefixes'),
    sql.inList(`${alias}.model`, 'models'),
    `(${alias}.model IS NULL AND ${sql.inList(`${alias}.agent_id`, 'agentIdsWithoutModel')})`,
    sql.inList(`${alias}.source`, 'sources'),
    sql.inList(`${alias}.token_id`, 'tokenIds'),
    sql.inList(`${alias}.agent_id`, 'agentIds'),
  ];
  return `(${held.join(' OR ')}) IS NOT TRUE`;
}

/** SQL true when the run `alias` is not deferred past `now` (a placeholder). */
export function dueSql(alias: string, now: string): string {
  return `(${alias}.not_before IS NULL OR ${alias}.not_before <= ${now})`;
}

/**
 * A deferral's writes: the run waits until `notBefore`, and its held time grows by the wait
 * (never by less than nothing: a time already past defers it for no time).
 */
export function deferral(now: number, notBefore: number): { notBefore: number; heldMs: number } {
  return { notBefore, heldMs: Math.max(0, Math.round(notBefore - now)) };
}

/**
 * A leased run put back until a time, fenced by its lease owner; as a release, the claim is
 * not counted as an attempt. Its parameters, by `placeholder(n)`: 1 not_before, 2 the held
 * time added, 3 the run's id, 4 its owner.
 */
export function deferRunSql(placeholder: (n: number) => string, atLeastZero: string): string {
  return `UPDATE runs SET status = 'queued', lease_owner = NULL, lease_until = NULL,
                          attempts = ${atLeastZero}(attempts - 1, 0),
                          not_before = ${placeholder(1)}, held_ms = held_ms + ${placeholder(2)}
           WHERE id = ${placeholder(3)} AND lease_owner = ${placeholder(4)} AND status = 'running'`;
}

/** The earliest not_before still ahead of `now` (a placeholder), through `runs_deferred`. */
export function nextNotBeforeSql(now: string): string {
  return `SELECT MIN(not_before) AS at FROM runs
           WHERE status = 'queued' AND not_before IS NOT NULL AND not_before > ${now}`;
}
