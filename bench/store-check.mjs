// Reads the gateway's SQLite store (read-only, beside the running gateway) to
// wait for its run backlog between rounds and to check, at the end, that every
// acknowledged request was committed.
import Database from 'better-sqlite3';
import pg from 'pg';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function openStore(path) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const active = db.prepare("SELECT count(*) AS n FROM runs WHERE status IN ('queued', 'running')");
  const wakes = db.prepare("SELECT count(*) AS n FROM events WHERE source = 'hook:wake'");
  const agentRuns = db.prepare("SELECT count(*) AS n FROM runs WHERE source = 'hook:agent'");
  const finished = db.prepare('SELECT count(*) AS n FROM runs WHERE finished_at IS NOT NULL');
  return {
    activeRuns: () => active.get().n,
    finishedRuns: () => finished.get().n,
    committedWakes: () => wakes.get().n,
    committedAgentRuns: () => agentRuns.get().n,
    close: () => db.close(),
  };
}

/** The same reads on a PostgreSQL gateway's database. */
export async function openPgStore(url) {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const count = async (sql) => Number((await pool.query(sql)).rows[0].n);
  return {
    activeRuns: () => count("SELECT count(*) AS n FROM runs WHERE status IN ('queued', 'running')"),
    finishedRuns: () => count('SELECT count(*) AS n FROM runs WHERE finished_at IS NOT NULL'),
    committedWakes: () => count("SELECT count(*) AS n FROM events WHERE source = 'hook:wake'"),
    committedAgentRuns: () => count("SELECT count(*) AS n FROM runs WHERE source = 'hook:agent'"),
    close: () => pool.end(),
  };
}

/** A database of its own on the server of `adminUrl`, made by `create` and dropped by `drop`. */
export function pgDatabase(adminUrl, name) {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const admin = async (sql) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  return {
    url: url.toString(),
    create: () => admin(`CREATE DATABASE ${name}`),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * Waits until the gateway has executed every accepted agent run, so the backlog
 * of one round does not take CPU from the next target. Resolves to the seconds
 * waited, or null when the backlog was still there after `timeoutMs`.
 */
export async function waitForIdleRuns(store, timeoutMs) {
  const started = performance.now();
  while ((await store.activeRuns()) > 0) {
    if (performance.now() - started > timeoutMs) return null;
    await sleep(100);
  }
  return (performance.now() - started) / 1000;
}

/**
 * Without per-request ids from the load generator, the check is by count: the
 * store must hold at least every 2xx answer (none lost) and at most every request
 * sent (the rest were in flight when the generator stopped, so no answer was read).
 */
export function commitCheck(label, committed, { ok, sent, rejected }) {
  const upper = sent - rejected;
  const pass = committed >= ok && committed <= upper;
  return {
    pass,
    text: `${pass ? 'ok  ' : 'FAIL'} ${label}: ${committed} committed for ${ok} 2xx answers (${sent} sent; ${Math.max(0, upper - ok)} without an answer read when the generator stopped)`,
  };
}
