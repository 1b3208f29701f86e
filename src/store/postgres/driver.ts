/**
 * The scale-out driver, PostgreSQL (docs/postgres.md): its `store` section,
 * how it resolves, opens and is checked by `agentgate doctor`. The store
 * itself is loaded only when a gateway opens one.
 */
import type { Client as PgClient } from 'pg';
import { z } from 'zod';
import {
  type DriverCheck,
  nonEmptyText,
  type ResolvedRetention,
  resolveRetention,
  retentionSchema,
  type StoreDriver,
  versionVerdict,
} from '../driver.js';
import { redactUrl } from './redact-url.js';

export const postgresConfigSchema = z.strictObject({
  driver: z.literal('postgres'),
  url: nonEmptyText,
  /** Connections each replica keeps to PostgreSQL at most. */
  poolMax: z.number().int().min(2).max(200).default(10),
  retention: retentionSchema,
});

export interface ResolvedPostgresStore {
  driver: 'postgres';
  url: string;
  poolMax: number;
  retention: ResolvedRetention;
}

export const postgresDriver: StoreDriver<z.infer<typeof postgresConfigSchema>, ResolvedPostgresStore> = {
  driver: 'postgres',
  resolve: (raw) => ({
    driver: 'postgres',
    url: raw.url,
    poolMax: raw.poolMax,
    retention: resolveRetention(raw.retention),
  }),
  /**
   * Connects and migrates first: a database that cannot be reached fails here
   * with an error naming `store.url`, before the gateway listens.
   */
  async open(config) {
    const { PgStore } = await import('./pg-store.js');
    const store = new PgStore({ url: config.url, poolMax: config.poolMax });
    try {
      await store.ready;
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
    return store;
  },
  check: (config, timeoutMs) => checkDatabase(config.url, timeoutMs),
};

/** Connects and reads the schema version, changing nothing. */
async function checkDatabase(url: string, timeoutMs: number): Promise<DriverCheck> {
  // Loaded here, not with this module: a gateway on SQLite reads this file for its schema
  // and never needs the PostgreSQL client (it would add to every start).
  const { default: pg } = await import('pg');
  const where = `postgres ${redactUrl(url)}`;
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  // A connection that dies later must not crash the process with an unhandled 'error'.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    return { level: 'fail', message: `${where}: cannot connect: ${scrub(error, url)}` };
  }
  try {
    const exists = await client.query<{ name: string | null }>(
      "SELECT to_regclass('schema_migrations')::text AS name",
    );
    if (!exists.rows[0]?.name)
      return { level: 'warn', message: `${where}: connected; no schema yet (\`agentgate run\` creates it)` };
    const { rows } = await client.query<{ version: number | null }>(
      'SELECT MAX(version) AS version FROM schema_migrations',
    );
    const verdict = versionVerdict(where, rows[0]?.version ?? 0, await migrationCount());
    return verdict.level === 'fail' ? verdict : withVacuumVerdict(verdict, await vacuumSettings(client));
  } catch (error) {
    return { level: 'fail', message: `${where}: ${scrub(error, url)}` };
  } finally {
    await client.end().catch(() => {});
  }
}

/** The server settings autovacuum needs: both must be on for it to run at all. */
async function vacuumSettings(client: PgClient): Promise<{ autovacuum: string; trackCounts: string }> {
  const { rows } = await client.query<{ autovacuum: string; track_counts: string }>(
    "SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts",
  );
  return { autovacuum: rows[0]?.autovacuum ?? 'on', trackCounts: rows[0]?.track_counts ?? 'on' };
}

/**
 * A server without autovacuum keeps every dead row version of the run queue's
 * busy rows (a run's row changes twice, its key's head once): the indexes its
 * claims read grow with every run, so claims slow down the longer the gateway
 * is busy (docs/postgres.md, "Dead rows and VACUUM"). Worth a warning, not a failure.
 */
export function withVacuumVerdict(
  verdict: DriverCheck,
  settings: { autovacuum: string; trackCounts: string },
): DriverCheck {
  const off = [
    settings.autovacuum === 'off' ? 'autovacuum' : null,
    settings.trackCounts === 'off' ? 'track_counts' : null,
  ].filter((name): name is string => name !== null);
  if (off.length === 0) return verdict;
  return {
    level: 'warn',
    message:
      `${verdict.message}; the server runs with ${off.join(' and ')} off, so the run queue's dead rows ` +
      'are never vacuumed and its claims slow down over time: turn it on (docs/postgres.md, "Dead rows and VACUUM")',
  };
}

/** The driver's message without the URL or its password (pg may quote either). */
function scrub(error: unknown, url: string): string {
  let text = (error as Error).message || String((error as { code?: unknown }).code ?? 'error');
  try {
    const password = decodeURIComponent(new URL(url).password);
    if (password) text = text.split(password).join('***');
  } catch {
    // An unparseable URL is refused by pg before it could be quoted.
  }
  return text.split(url).join(redactUrl(url));
}

/**
 * The schema version this agentgate migrates to: its number of steps. The steps are
 * read from their files only here and when a store opens, not with the config.
 */
async function migrationCount(): Promise<number> {
  const { MIGRATIONS } = await import('./migrations.js');
  return MIGRATIONS.length;
}
