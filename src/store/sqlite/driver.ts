/**
 * The embedded default driver, SQLite (docs/operating.md): its `store`
 * section, how it resolves, opens and is checked by `agentgate doctor`.
 * The store itself is loaded only when a gateway opens one.
 */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import {
  type DriverCheck,
  nonEmptyText,
  type ResolvedRetention,
  resolveRetention,
  retentionSchema,
  type StoreDriver,
  versionVerdict,
} from '../driver.js';

export const sqliteConfigSchema = z.strictObject({
  driver: z.literal('sqlite'),
  path: nonEmptyText.default('{config_dir}/state/agentgate.db'),
  /**
   * "full" (default): every commit's WAL write is synced to the disk before its
   * answer, so an answered request survives power loss; group commit shares one sync
   * among the requests of a turn. "normal": a commit survives the process being
   * killed but not power loss (docs/durability.md).
   */
  synchronous: z.enum(['normal', 'full']).default('full'),
  retention: retentionSchema,
});

export interface ResolvedSqliteStore {
  driver: 'sqlite';
  path: string;
  synchronous: 'normal' | 'full';
  retention: ResolvedRetention;
  /** Test hook, never read from a config file: see SqliteStoreOptions. */
  checkpointThread?: boolean;
}

export const sqliteDriver: StoreDriver<z.infer<typeof sqliteConfigSchema>, ResolvedSqliteStore> = {
  driver: 'sqlite',
  resolve: (raw, resolvePath) => ({
    driver: 'sqlite',
    path: resolvePath(raw.path),
    synchronous: raw.synchronous,
    retention: resolveRetention(raw.retention),
  }),
  async open(config) {
    const { SqliteStore } = await import('./sqlite-store.js');
    return new SqliteStore({
      path: config.path,
      synchronous: config.synchronous,
      checkpointThread: config.checkpointThread,
    });
  },
  check: async (config) => checkFile(config.path),
};

/** Opens the file read-only, so a running gateway is not disturbed. */
async function checkFile(path: string): Promise<DriverCheck> {
  if (!existsSync(path))
    return { level: 'warn', message: `sqlite ${path} does not exist yet (\`agentgate run\` creates it)` };
  const { default: Database } = await import('better-sqlite3');
  const current = await migrationCount();
  let db: InstanceType<typeof Database> | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 2000 });
    const version = db.pragma('user_version', { simple: true }) as number;
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return versionVerdict(`sqlite ${path}`, version, current);
  } catch (error) {
    return { level: 'fail', message: `sqlite ${path} does not open: ${(error as Error).message}` };
  } finally {
    db?.close();
  }
}

/**
 * The schema version this agentgate migrates to: its number of steps. The steps are
 * read from their files only here and when a store opens, not with the config.
 */
async function migrationCount(): Promise<number> {
  const { MIGRATIONS } = await import('./migrations.js');
  return MIGRATIONS.length;
}
