/**
 * One PostgreSQL database for all the tests of a file, emptied before each test:
 * creating a database and migrating it took longer than most tests that use it.
 * For tests that need empty tables, not a database no one else ever opened (those
 * still call `createTestDatabase` themselves: the migration race, replicas started
 * together on a fresh database).
 */
import pg from 'pg';
import { createTestDatabase } from '../store/drivers.js';

export interface SharedTestDatabase {
  /** The database's URL, its tables empty (made on the first call; the first gateway on it migrates it). */
  fresh(): Promise<string>;
  /** Drops the database; the next `fresh` makes another. */
  drop(): Promise<void>;
}

export function sharedTestDatabase(): SharedTestDatabase {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  return {
    async fresh() {
      database ??= await createTestDatabase();
      await emptyTables(database.url);
      return database.url;
    },
    async drop() {
      await database?.drop();
      database = undefined;
    },
  };
}

/**
 * Deletes the rows of every table the migrations made, whichever they are, and
 * keeps `schema_migrations`, so the next gateway finds the schema current. A
 * DELETE, not a TRUNCATE: on a test's few rows it took a fifth of the time (a
 * TRUNCATE swaps every table's files). The identity sequences go on counting,
 * which the store's order by `seq` allows. Call it with no store open on the
 * database: an open one could still be writing.
 */
async function emptyTables(url: string): Promise<void> {
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
