/**
 * What a store driver is to the rest of the gateway (docs/architecture.md,
 * "Store drivers"): one folder under src/store/ exporting one `StoreDriver` —
 * its `store` config section, how that section resolves, how the store opens,
 * what `agentgate doctor` checks, and how many schema migrations it has. The
 * gateway knows the drivers only through the list in store/drivers/registry.ts:
 * a third driver is a folder, one line there, and a run of the conformance suite
 * (test/store/drivers.ts) against it.
 */
import { z } from 'zod';
import { parseDuration } from '../util/duration.js';
import type { Store } from './types.js';

/** `store.retention` in milliseconds; 0 keeps forever (runs, events) or never prunes (every). */
export interface ResolvedRetention {
  runsMs: number;
  eventsMs: number;
  everyMs: number;
}

/** What `agentgate doctor` prints for the store: one verdict and its sentence. */
export interface DriverCheck {
  level: 'ok' | 'warn' | 'fail';
  message: string;
}

export interface StoreDriver<Raw extends { driver: string }, Resolved extends { driver: string }> {
  readonly driver: Raw['driver'];
  /** Paths resolved against the config's folder, durations in ms. */
  resolve(raw: Raw, resolvePath: (path: string) => string): Resolved;
  /** Opens the store ready for use; an unreachable database fails here, naming the config key. */
  open(config: Resolved): Promise<Store>;
  /** Reachable, and at the schema version this agentgate migrates to — without changing anything. */
  check(config: Resolved, timeoutMs: number): Promise<DriverCheck>;
}

/**
 * Retention durations (docs/operating.md "Retention"): whole seconds, minutes,
 * hours or days, or "0" (and any zero duration) to keep forever. Stricter than
 * other durations: no "ms", no fractions. The same keys on every driver.
 */
const retentionDuration = z
  .string()
  .regex(/^(0|\d+[smhd])$/, 'must be a duration like "30d", "12h", "10m", "45s" or "0" (keep forever)');

export const RETENTION_DEFAULTS = { runs: '30d', events: '30d', every: '10m' } as const;

export const retentionSchema = z
  .strictObject({
    runs: retentionDuration.default(RETENTION_DEFAULTS.runs),
    events: retentionDuration.default(RETENTION_DEFAULTS.events),
    every: retentionDuration.default(RETENTION_DEFAULTS.every),
  })
  .default(RETENTION_DEFAULTS);

export function resolveRetention(raw: z.infer<typeof retentionSchema>): ResolvedRetention {
  return {
    runsMs: parseDuration(raw.runs),
    eventsMs: parseDuration(raw.events),
    everyMs: parseDuration(raw.every),
  };
}

/** The verdict on a schema version: older is a warning (`run` migrates it at start), newer a failure. */
export function versionVerdict(where: string, version: number, current: number): DriverCheck {
  if (version === current)
    return { level: 'ok', message: `${where}: opens, schema version ${version} (current)` };
  if (version < current) {
    return {
      level: 'warn',
      message: `${where}: schema version ${version}, this agentgate uses ${current}; \`agentgate run\` migrates it at start`,
    };
  }
  return {
    level: 'fail',
    message: `${where}: schema version ${version} is newer than this agentgate's (${current}): upgrade agentgate`,
  };
}

export const nonEmptyText = z.string().min(1, 'must not be empty');
