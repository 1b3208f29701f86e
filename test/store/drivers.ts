/**
 * The store drivers the conformance suite runs against: SQLite always, and
 * PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) in a database made
 * for this test run and dropped after it. PostgreSQL being unreachable fails the
 * suite loudly; AGENTGATE_TEST_PG=0 skips that half on a machine without it.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { PgStore, type PgStoreOptions } from '../../src/store/postgres/pg-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';

export const PG_ADMIN_URL =
  process.env.AGENTGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const PG_ENABLED = process.env.AGENTGATE_TEST_PG !== '0';

export interface Driver {
  name: 'sqlite' | 'postgres';
  /** Whether two stores opened on the same data act as two replicas (PostgreSQL only). */
  replicas: boolean;
  setup(): Promise<void>;
  /** Starts each test from empty tables. */
  reset(): Promise<void>;
  /** A new store on the same data; closed by `closeAll`. */
  open(options?: Partial<PgStoreOptions>): Store;
  closeAll(): Promise<void>;
  teardown(): Promise<void>;
}

/**
 * A database of its own on the local PostgreSQL server, dropped by `drop`. Its
 * sessions commit with `synchronous_commit = off` unless `durable`: a commit then
 * waits for no WAL flush (~4 ms on the CI disk each) yet is seen by every other
 * session at once, and the server is never crashed by a test. The fault tests
 * (test/faults/) ask for `durable`, the server's own setting.
 */
export async function createTestDatabase(
  options: { durable?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `agentgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    if (!options.durable) await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

function sqliteDriver(): Driver {
  let dir = '';
  let stores: Store[] = [];
  return {
    name: 'sqlite',
    replicas: false,
    async setup() {},
    async reset() {
      dir = tempDir('agentgate-conformance-');
    },
    open() {
      // The contract is tested here, not durability: no WAL sync per commit (createTestDatabase),
      // and no checkpointer thread (test/helpers/gateway.ts, withoutCheckpointThread).
      const store = new SqliteStore({
        path: join(dir, 'state', 'agentgate.db'),
        synchronous: 'normal',
        checkpointThread: false,
      });
      stores.push(store);
      return store;
    },
    async closeAll() {
      for (const store of stores) await store.close();
      stores = [];
      rmSync(dir, { recursive: true, force: true });
    },
    async teardown() {},
  };
}

function postgresDriver(): Driver {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let stores: PgStore[] = [];
  let migrated = false;
  return {
    name: 'postgres',
    replicas: true,
    async setup() {
      database = await createTestDatabase();
    },
    async reset() {
      if (!database) throw new Error('setup did not run');
      // The first test's store makes the tables; each later one starts from them emptied.
      if (migrated) await emptyTables(database.url);
      migrated = true;
    },
    open(options = {}) {
      if (!database) throw new Error('setup did not run');
      const store = new PgStore({ url: database.url, poolMax: 4, ...options });
      stores.push(store);
      return store;
    },
    async closeAll() {
      for (const store of stores) await store.close();
      stores = [];
    },
    async teardown() {
      await database?.drop();
    },
  };
}

export const DRIVERS: Driver[] = PG_ENABLED ? [sqliteDriver(), postgresDriver()] : [sqliteDriver()];

/**
 * Deletes the rows of every table the migrations made, whichever they are, and
 * keeps `schema_migrations`, so the next gateway finds the schema current. A
 * DELETE, not a TRUNCATE: on a test's few rows it took a fifth of the time (a
 * TRUNCATE swaps every table's files). The identity sequences go on counting,
 * which the store's order by `seq` allows. Call it with no store open on the
 * database: an open one could still be writing.
 */
export async function emptyTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `SELECT quote_ident(tablename) AS name FROM pg_tables
        WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'`,
    );
    const deletes = rows.map((row) => `DELETE FROM ${row.name};`).join(' ');
    await client.query(`BEGIN; ${deletes} COMMIT;`);
  } finally {
    await client.end();
  }
}
