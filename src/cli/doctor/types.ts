/**
 * One doctor check's verdict: `ok`, `warn` (works, but should change) or `fail`
 * (will not work, or is unsafe); doctor exits 1 on any `fail`. Messages never
 * hold a secret.
 */
export type Verdict = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  /** What was checked, e.g. `hooks.token`, `store`, `channel telegram`. */
  name: string;
  status: Verdict;
  message: string;
  /** More lines, e.g. each problem of an invalid config. */
  details?: string[];
}

export const ok = (name: string, message: string): CheckResult => ({ name, status: 'ok', message });
export const warn = (name: string, message: string): CheckResult => ({ name, status: 'warn', message });
export const fail = (name: string, message: string): CheckResult => ({ name, status: 'fail', message });

/** A probe of an outside service: run in parallel with the others, each with its own short time limit. */
export interface Probe {
  name: string;
  run(signal: AbortSignal): Promise<CheckResult>;
}
