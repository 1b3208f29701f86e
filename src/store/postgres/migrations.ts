/**
 * Schema versions of the PostgreSQL store: the steps in migrations/ (one `.sql`
 * file each, docs/development.md "Adding a migration"), applied in order by
 * `agentgate run` itself and recorded in `schema_migrations`. Never edit a
 * released step; add a new file.
 *
 * Several replicas may start at the same moment: the whole migration runs in one
 * transaction holding a transaction-level advisory lock, so exactly one replica
 * applies each step and the others wait, then find nothing left to do.
 */
import type { PoolClient } from 'pg';
import { readMigrations } from '../migration-files.js';

/** Arbitrary constant naming agentgate's migration lock among other advisory locks. */
export const MIGRATION_LOCK_KEY = 0x61676774; // "aggt"

/** The folder of the steps, next to this module in src/ and in dist/. */
export const MIGRATIONS_FOLDER = new URL('./migrations/', import.meta.url);

export const MIGRATIONS: readonly string[] = readMigrations(MIGRATIONS_FOLDER);

/** Applies the missing steps, each recorded in schema_migrations, under the migration lock. */
export async function migrate(client: PoolClient): Promise<number> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ version: number | null }>(
      'SELECT MAX(version) AS version FROM schema_migrations',
    );
    const current = rows[0]?.version ?? 0;
    for (let version = current; version < MIGRATIONS.length; version++) {
      await client.query(MIGRATIONS[version] as string);
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version + 1]);
    }
    await client.query('COMMIT');
    return MIGRATIONS.length - current;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
