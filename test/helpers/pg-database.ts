/**
 * One PostgreSQL database for all the tests of a file, emptied before each test:
 * creating a database and migrating it took longer than most tests that use it.
 * For tests that need empty tables, not a database no one else ever opened (those
 * still call `createTestDatabase` themselves: the migration race, replicas started
 * together on a fresh database).
 */
import { createTestDatabase, emptyTables } from '../store/drivers.js';

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
