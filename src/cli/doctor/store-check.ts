/**
 * Doctor's store check: the configured engine says whether its store opens
 * (SQLite read-only, so a running gateway is not disturbed) or connects
 * (PostgreSQL), and whether the schema version is the one this agentgate
 * migrates to. Older is a warning (`run` migrates it at start); newer is a
 * fail (a newer agentgate wrote it; this one would misread it).
 */
import { checkStore, type ResolvedStore } from '../../store/drivers/registry.js';
import { fail, ok, type Probe, warn } from './types.js';

const NAME = 'store';
const VERDICT = { ok, warn, fail } as const;

export function storeProbe(store: ResolvedStore, timeoutMs: number): Probe {
  return {
    name: NAME,
    run: async () => {
      const { level, message } = await checkStore(store, timeoutMs);
      return VERDICT[level](NAME, message);
    },
  };
}
