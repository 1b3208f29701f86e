import type { ResolvedStore } from '../config/resolved.js';
import { PgStore } from './postgres/pg-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './types.js';

export class StoreConfigError extends Error {}

/**
 * Opens the configured engine. PostgreSQL connects and migrates in the
 * background: its first call fails with an error naming `store.url` when the
 * database cannot be reached (the CLI then exits 1).
 */
export function openStore(config: ResolvedStore): Store {
  if (config.driver === 'sqlite')
    return new SqliteStore({ path: config.path, synchronous: config.synchronous });
  return new PgStore({ url: config.url, poolMax: config.poolMax });
}
