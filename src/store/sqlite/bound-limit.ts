/**
 * A LIMIT taken from a bound parameter, written so that SQLite keeps the
 * statement's plan. SQLite plans with the value of a bare `LIMIT ?`, so it marks
 * the statement to be prepared again whenever that parameter is bound — and
 * better-sqlite3 binds on every call, so every call parsed and planned the
 * statement anew (the claim's head query took 74 µs instead of 22, reading a
 * session's transcript 60 µs instead of 12). As an expression the value is no
 * longer known to the planner, and the prepared plan is reused
 * (docs/architecture.md, "What a run costs the store").
 */
export const BOUND_LIMIT = 'CAST(? AS INTEGER)';
