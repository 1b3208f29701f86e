/**
 * The store drivers this agentgate has, and the `store` config section they
 * make together (docs/architecture.md, "Store drivers"). Everything outside a
 * driver's folder reaches it through here.
 */
import { z } from 'zod';
import type { DriverCheck, StoreDriver } from '../driver.js';
import { postgresConfigSchema, postgresDriver, type ResolvedPostgresStore } from '../postgres/driver.js';
import { type ResolvedSqliteStore, sqliteConfigSchema, sqliteDriver } from '../sqlite/driver.js';
import type { Store } from '../types.js';

/** The `store` section: one driver's, chosen by `driver`. */
export const storeConfigSchema = z.discriminatedUnion('driver', [sqliteConfigSchema, postgresConfigSchema]);

export type RawStoreConfig = z.infer<typeof storeConfigSchema>;
export type ResolvedStore = ResolvedSqliteStore | ResolvedPostgresStore;

const DRIVERS: { [D in ResolvedStore['driver']]: StoreDriver<{ driver: D }, { driver: D }> } = {
  sqlite: sqliteDriver as never,
  postgres: postgresDriver as never,
};

/**
 * The driver of a config section. TypeScript cannot tie a union's members to
 * their drivers on its own; the table above is keyed by `driver`, so the
 * driver found always takes the section it is given.
 */
function driverOf<C extends { driver: ResolvedStore['driver'] }>(config: C): StoreDriver<C, ResolvedStore> {
  return DRIVERS[config.driver] as unknown as StoreDriver<C, ResolvedStore>;
}

/** Paths resolved against the config's folder, durations in ms. */
export function resolveStore(raw: RawStoreConfig, resolvePath: (path: string) => string): ResolvedStore {
  return driverOf(raw).resolve(raw, resolvePath);
}

/** Opens the configured driver's store, ready for use (the CLI exits 1 when it cannot). */
export function openStore(config: ResolvedStore): Promise<Store> {
  return driverOf(config).open(config);
}

/** What `agentgate doctor` says about the configured store, changing nothing. */
export function checkStore(config: ResolvedStore, timeoutMs: number): Promise<DriverCheck> {
  return driverOf(config).check(config, timeoutMs);
}
