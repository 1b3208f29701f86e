import type { ResolvedStore } from '../config/resolved.js';
import { PgStore } from './postgres/pg-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './types.js';

export class StoreConfigError extends Error {}

/**
 * Opens the configured engine, ready for use. PostgreSQL connects and migrates
 * first: a database that cannot be reached fails here with an error naming
 * `store.url`, before the gateway listens (the CLI then exits 1).
 */
export async function openStore(config: ResolvedStore): Promise<Store> {
  if (config.driver === 'sqlite')
    return new SqliteStore({ path: config.path, synchronous: config.synchronous });
  const store = new PgStore({ url: config.url, poolMax: config.poolMax });
  try {
    await store.ready;
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
