/**
 * PostgreSQL schema creation by `agentgate run` itself: replicas started at the
 * same moment on an empty database all come up, each migration step applied
 * once (under the advisory lock), and a restart applies nothing again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { createTestDatabase, PG_ENABLED } from './drivers.js';

describe.runIf(PG_ENABLED)('PostgreSQL migrations', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it('eight stores opened at once on an empty database all become ready; each step is applied once', async () => {
    const stores = Array.from({ length: 8 }, () => new PgStore({ url: database.url, poolMax: 2 }));
    try {
      await Promise.all(stores.map((store) => store.ready));
      const { rows } = await (stores[0] as PgStore).pool.query(
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
    const again = new PgStore({ url: database.url, poolMax: 2 });
    await again.ready;
    const { rows } = await again.pool.query('SELECT count(*)::int AS n FROM schema_migrations');
    expect(rows[0].n).toBe(MIGRATIONS.length);
    await again.close();
  });

  it('an unreachable database fails with an error naming store.url, without the password', async () => {
    const store = new PgStore({ url: 'postgres://postgres:s3cret@127.0.0.1:1/none', connectTimeoutMs: 2000 });
    await expect(store.getRun('run_x')).rejects.toThrow(
      /^store\.url: cannot connect to PostgreSQL at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/none/,
    );
    await expect(store.getRun('run_x')).rejects.not.toThrow(/s3cret/);
    await store.close();
  });
});
