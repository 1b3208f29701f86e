/**
 * Size of a fault run and how its figures are reported. `FAULTS_SHORT=1` (what
 * CI sets) shrinks every test to fit about two minutes altogether; the full
 * mode gives the figures quoted in docs/reliability.md.
 */
export const SHORT = process.env.FAULTS_SHORT === '1';

/** Picks the full-mode or the short-mode value. */
export function size<T>(full: T, short: T): T {
  return SHORT ? short : full;
}

/** One line of JSON per test, so a run's figures can be read (and grepped) from its output. */
export function reportFigure(test: string, figures: Record<string, unknown>): void {
  console.log(JSON.stringify({ faults: test, mode: SHORT ? 'short' : 'full', ...figures }));
}

/** The q-quantile (0..1) of `values` by the nearest-rank method. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new Error('no values');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
