/**
 * One doctor check's verdict: `ok`, `warn` (works, but should change) or `fail`
 * (will not work, or is unsafe); doctor exits 1 on any `fail`. Messages never
 * hold a secret.
 */
export { type CheckResult, fail, ok, type Verdict, warn } from '../../http/probe.js';

import type { CheckResult } from '../../http/probe.js';

/** A probe of an outside service: run in parallel with the others, each with its own short time limit. */
export interface Probe {
  name: string;
  run(signal: AbortSignal): Promise<CheckResult>;
}
