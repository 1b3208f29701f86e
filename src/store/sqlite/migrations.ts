/**
 * Schema versions of the SQLite store: the steps in migrations/ (one `.sql` file
 * each, docs/development.md "Adding a migration"), applied in order by the store
 * at open, each in its own transaction, and recorded in `PRAGMA user_version`.
 * Never edit a released step; add a new file.
 */
import { readMigrations } from '../migration-files.js';

/** The folder of the steps, next to this module in src/ and in dist/. */
export const MIGRATIONS_FOLDER = new URL('./migrations/', import.meta.url);

export const MIGRATIONS: readonly string[] = readMigrations(MIGRATIONS_FOLDER);
