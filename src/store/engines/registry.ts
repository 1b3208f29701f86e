/**
 * The store engines this agentgate has, and the `store` config section they
 * make together (docs/architecture.md, "Store engines"). Everything outside an
 * engine's folder reaches it through here.
 */
import { z } from 'zod';
import type { EngineCheck, StoreEngine } from '../engine.js';
import { postgresConfigSchema, postgresEngine, type ResolvedPostgresStore } from '../postgres/engine.js';
import { type ResolvedSqliteStore, sqliteConfigSchema, sqliteEngine } from '../sqlite/engine.js';
import type { Store } from '../types.js';

/** The `store` section: one engine's, chosen by `driver`. */
export const storeConfigSchema = z.discriminatedUnion('driver', [sqliteConfigSchema, postgresConfigSchema]);

export type RawStoreConfig = z.infer<typeof storeConfigSchema>;
export type ResolvedStore = ResolvedSqliteStore | ResolvedPostgresStore;

const ENGINES: { [D in ResolvedStore['driver']]: StoreEngine<{ driver: D }, { driver: D }> } = {
  sqlite: sqliteEngine as never,
  postgres: postgresEngine as never,
};

/**
 * The engine of a config section. TypeScript cannot tie a union's members to
 * their engines on its own; the table above is keyed by `driver`, so the
 * engine found always takes the section it is given.
 */
function engineOf<C extends { driver: ResolvedStore['driver'] }>(config: C): StoreEngine<C, ResolvedStore> {
  return ENGINES[config.driver] as unknown as StoreEngine<C, ResolvedStore>;
}

/** Paths resolved against the config's folder, durations in ms. */
export function resolveStore(raw: RawStoreConfig, resolvePath: (path: string) => string): ResolvedStore {
  return engineOf(raw).resolve(raw, resolvePath);
}

/** Opens the configured engine, ready for use (the CLI exits 1 when it cannot). */
export function openStore(config: ResolvedStore): Promise<Store> {
  return engineOf(config).open(config);
}

/** What `agentgate doctor` says about the configured store, changing nothing. */
export function checkStore(config: ResolvedStore, timeoutMs: number): Promise<EngineCheck> {
  return engineOf(config).check(config, timeoutMs);
}
