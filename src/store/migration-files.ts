/**
 * Schema migrations as files (docs/development.md, "Adding a migration"): each
 * driver keeps one `.sql` file per step in its `migrations/` folder, named
 * `NNNN-what-it-does.sql` and applied in the order of that number. The files sit
 * next to the driver's migrations.ts in both layouts: src/ (tests run the
 * sources) and dist/ (the build copies them, as it does the dashboard's page).
 *
 * Read synchronously when the driver's store module loads (at open, or when
 * `agentgate doctor` checks the schema version): the step numbers must run 1..N
 * without a gap or a repeat, since the schema version a database records is the
 * number of steps applied to it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const FILE_NAME = /^(\d{4})-[a-z0-9][a-z0-9-]*\.sql$/;

/** The `.sql` file names of a migrations folder, by step number; throws on a gap, a repeat or a bad name. */
export function migrationFileNames(folder: URL): string[] {
  const named = readdirSync(folder)
    .filter((name) => name.endsWith('.sql'))
    .map((name) => ({ name, step: Number(FILE_NAME.exec(name)?.[1] ?? Number.NaN) }))
    .sort((a, b) => a.step - b.step);
  named.forEach(({ name, step }, i) => {
    if (step !== i + 1) {
      throw new Error(
        `${fileURLToPath(folder)}: migration ${name} should be step ${i + 1} (files are NNNN-name.sql, numbered 1..N)`,
      );
    }
  });
  return named.map(({ name }) => name);
}

/** The SQL of each step of a migrations folder, step 1 first. */
export function readMigrations(folder: URL): string[] {
  return migrationFileNames(folder).map((name) => readFileSync(new URL(name, folder), 'utf8'));
}
