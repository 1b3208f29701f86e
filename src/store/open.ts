import type { ResolvedStore } from '../config/resolved.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './types.js';

export class StoreConfigError extends Error {}

export function openStore(config: ResolvedStore): Store {
  if (config.driver === 'sqlite')
    return new SqliteStore({ path: config.path, synchronous: config.synchronous });
  throw new StoreConfigError('store.driver: "postgres" is not available in this version yet; use "sqlite"');
}
