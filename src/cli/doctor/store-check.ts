/**
 * Doctor's store check: the SQLite file opens (read-only, so a running gateway is
 * not disturbed) or PostgreSQL connects, and the schema version is the one this
 * agentgate migrates to. Older is a warning (`run` migrates it at start); newer
 * is a fail (a newer agentgate wrote it; this one would misread it).
 */

import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { ResolvedStore } from '../../config/resolved.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../store/postgres/migrations.js';
import { redactUrl } from '../../store/postgres/pg-store.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../store/sqlite/migrations.js';
import { type CheckResult, fail, ok, type Probe, warn } from './types.js';

const NAME = 'store';

export function storeProbe(store: ResolvedStore, timeoutMs: number): Probe {
  return {
    name: NAME,
    run: () => (store.driver === 'sqlite' ? checkSqlite(store.path) : checkPostgres(store.url, timeoutMs)),
  };
}

async function checkSqlite(path: string): Promise<CheckResult> {
  if (!existsSync(path))
    return warn(NAME, `sqlite ${path} does not exist yet (\`agentgate run\` creates it)`);
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 2000 });
    const version = db.pragma('user_version', { simple: true }) as number;
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return versionVerdict(`sqlite ${path}`, version, SQLITE_MIGRATIONS.length);
  } catch (error) {
    return fail(NAME, `sqlite ${path} does not open: ${(error as Error).message}`);
  } finally {
    db?.close();
  }
}

async function checkPostgres(url: string, timeoutMs: number): Promise<CheckResult> {
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
    return fail(NAME, `${where}: cannot connect: ${scrub(error, url)}`);
  }
  try {
    const exists = await client.query<{ name: string | null }>(
      "SELECT to_regclass('schema_migrations')::text AS name",
    );
    if (!exists.rows[0]?.name)
      return warn(NAME, `${where}: connected; no schema yet (\`agentgate run\` creates it)`);
    const { rows } = await client.query<{ version: number | null }>(
      'SELECT MAX(version) AS version FROM schema_migrations',
    );
    return versionVerdict(where, rows[0]?.version ?? 0, PG_MIGRATIONS.length);
  } catch (error) {
    return fail(NAME, `${where}: ${scrub(error, url)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

function versionVerdict(where: string, version: number, current: number): CheckResult {
  if (version === current) return ok(NAME, `${where}: opens, schema version ${version} (current)`);
  if (version < current) {
    return warn(
      NAME,
      `${where}: schema version ${version}, this agentgate uses ${current}; \`agentgate run\` migrates it at start`,
    );
  }
  return fail(
    NAME,
    `${where}: schema version ${version} is newer than this agentgate's (${current}): upgrade agentgate`,
  );
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
