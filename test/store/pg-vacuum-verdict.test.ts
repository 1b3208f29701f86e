import { describe, expect, it } from 'vitest';
import { withVacuumVerdict } from '../../src/store/postgres/driver.js';

const current = { level: 'ok' as const, message: 'postgres db: opens, schema version 9 (current)' };

describe("doctor's PostgreSQL verdict and the server's autovacuum", () => {
  it('leaves the verdict as it is when autovacuum runs', () => {
    expect(withVacuumVerdict(current, { autovacuum: 'on', trackCounts: 'on' })).toEqual(current);
  });

  it('warns, naming the setting, when autovacuum is off', () => {
    const verdict = withVacuumVerdict(current, { autovacuum: 'off', trackCounts: 'on' });
    expect(verdict.level).toBe('warn');
    expect(verdict.message).toBe(
      'postgres db: opens, schema version 9 (current); the server runs with autovacuum off, so the run ' +
        "queue's dead rows are never vacuumed and its claims slow down over time: turn it on " +
        '(docs/postgres.md, "Dead rows and VACUUM")',
    );
  });

  it('names track_counts too: without it autovacuum cannot run either', () => {
    const verdict = withVacuumVerdict(current, { autovacuum: 'off', trackCounts: 'off' });
    expect(verdict.message).toContain('runs with autovacuum and track_counts off');
  });

  it('keeps an older schema a warning, with the autovacuum sentence after it', () => {
    const older = { level: 'warn' as const, message: 'postgres db: schema version 8, …' };
    const verdict = withVacuumVerdict(older, { autovacuum: 'off', trackCounts: 'on' });
    expect(verdict.level).toBe('warn');
    expect(verdict.message.startsWith(older.message)).toBe(true);
  });
});
