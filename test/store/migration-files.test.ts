/**
 * Migrations as files (docs/development.md, "Adding a migration"): each driver's
 * steps are `NNNN-name.sql` files numbered 1..N without a gap, they are exactly the
 * steps a store applies, and `agentgate doctor` calls a freshly migrated database
 * current at version N. The build copies the folders into dist/.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationFileNames } from '../../src/store/migration-files.js';
import { postgresDriver } from '../../src/store/postgres/driver.js';
import * as pgMigrations from '../../src/store/postgres/migrations.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { sqliteDriver } from '../../src/store/sqlite/driver.js';
import * as sqliteMigrations from '../../src/store/sqlite/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/gateway.js';
import { createTestDatabase, PG_ENABLED } from './drivers.js';

const RETENTION = { runsMs: 0, eventsMs: 0, everyMs: 0 };

describe.each([
  { name: 'sqlite', folder: 'src/store/sqlite/migrations', module: sqliteMigrations },
  { name: 'postgres', folder: 'src/store/postgres/migrations', module: pgMigrations },
])('$name migration files', ({ folder, module }) => {
  it('are NNNN-name.sql, numbered 1..N, and are the steps the store applies', () => {
    const names = migrationFileNames(module.MIGRATIONS_FOLDER);
    expect(names.length).toBeGreaterThan(0);
    names.forEach((name, i) => {
      expect(name).toMatch(/^\d{4}-[a-z0-9-]+\.sql$/);
      expect(Number(name.slice(0, 4))).toBe(i + 1);
    });
    expect(module.MIGRATIONS).toEqual(names.map((name) => readFileSync(join(folder, name), 'utf8')));
  });

  it('the build copies them into dist/', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
      scripts: { build: string };
      files: string[];
    };
    expect(pkg.scripts.build).toContain(`'${folder.replace(/^src\//, '')}'`);
    expect(pkg.files).toContain('dist');
  });
});

describe('migration file names', () => {
  let dir = '';
  beforeAll(() => {
    dir = tempDir('agentgate-migrations-');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a gap, a repeat or a bad name fails at open, naming the file', () => {
    const folder = (files: string[]) => {
      const path = join(dir, String(Math.random()).slice(2));
      mkdirSync(path);
      for (const file of files) writeFileSync(join(path, file), 'SELECT 1;');
      return pathToFileURL(`${path}/`);
    };
    expect(migrationFileNames(folder(['0002-b.sql', '0001-a.sql', 'README.md']))).toEqual([
      '0001-a.sql',
      '0002-b.sql',
    ]);
    expect(() => migrationFileNames(folder(['0001-a.sql', '0003-c.sql']))).toThrow(
      /0003-c\.sql should be step 2/,
    );
    expect(() => migrationFileNames(folder(['0001-a.sql', '0001-b.sql']))).toThrow(/should be step 2/);
    expect(() => migrationFileNames(folder(['0001-a.sql', '2-b.sql']))).toThrow(/2-b\.sql should be step 2/);
  });
});

describe("doctor's schema version", () => {
  it('sqlite: a database the store migrated is current at version N', async () => {
    const dir = tempDir('agentgate-migrations-');
    try {
      const path = join(dir, 'state', 'agentgate.db');
      await new SqliteStore({ path }).close();
      const check = await sqliteDriver.check(
        { driver: 'sqlite', path, synchronous: 'full', retention: RETENTION },
        2000,
      );
      const n = migrationFileNames(sqliteMigrations.MIGRATIONS_FOLDER).length;
      expect(check).toEqual({ level: 'ok', message: `sqlite ${path}: opens, schema version ${n} (current)` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(PG_ENABLED)(
    'postgres: a database the store migrated is current at version N',
    async () => {
      const database = await createTestDatabase();
      try {
        const store = new PgStore({ url: database.url, poolMax: 2 });
        await store.ready;
        await store.close();
        const check = await postgresDriver.check(
          { driver: 'postgres', url: database.url, poolMax: 2, retention: RETENTION },
          5000,
        );
        const n = migrationFileNames(pgMigrations.MIGRATIONS_FOLDER).length;
        expect(check.message).toContain(`schema version ${n} (current)`);
        expect(check.level).not.toBe('fail');
      } finally {
        await database.drop();
      }
    },
    30_000,
  );
});
