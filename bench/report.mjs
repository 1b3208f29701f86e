// The benchmark's printed report: one markdown table row per target with the
// median and min–max over rounds, and the ratios to the baseline.
import { median, range, ratioTo, spreadOf, sum } from './stats.mjs';

const rate = (value) => value.toFixed(0);
const ms = (value) => value.toFixed(2);
const times = (value) => `${value.toFixed(2)}×`;
const span = ({ min, max }, format) => `${format(min)}–${format(max)}`;

export function printTable(targets, baseline) {
  const lines = [
    '| target | req/s median | req/s min–max | p50 ms | p99 ms median (min–max) | ratio of medians | per-round ratios | gateway CPU µs/req median (min–max) | 2xx | other |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const { label, samples } of targets) {
    const rps = spreadOf(samples, 'rps');
    const p99 = spreadOf(samples, 'p99');
    const ratio = ratioTo(samples, baseline);
    lines.push(
      `| ${label} | ${rate(rps.median)} | ${span(rps, rate)} | ${ms(spreadOf(samples, 'p50').median)} | ${ms(p99.median)} (${span(p99, ms)}) | ${times(ratio.medians)} | ${span(ratio, (v) => v.toFixed(2))}× | ${cpuText(samples, 'cpuUsPerRequest')} | ${sum(samples, 'ok')} | ${sum(samples, 'other')} |`,
    );
  }
  console.log(lines.join('\n'));
}

/** Median (min–max) of a CPU figure over the samples that have it; '—' for the baseline. */
function cpuText(samples, metric) {
  const values = samples.map((s) => s[metric]).filter((v) => v !== undefined);
  if (values.length === 0) return '—';
  return `${rate(median(values))} (${span(range(values), rate)})`;
}

/**
 * An agent load's CPU per request holds the runs the worker executed in its window, and their
 * share moves with the machine (a run costs several accepts), so the req/s ratio can move
 * with no change in the code. These figures say which part moved (docs/performance.md).
 */
export function printAgentSplit(gateways) {
  console.log('\n/hooks/agent, what its CPU per request is made of (median over rounds, min–max):');
  for (const g of gateways) {
    const runs = g.samples.agent.map((s) => s.runsPerRequest).filter((v) => v !== undefined);
    const perHundred = runs.length
      ? `${(100 * median(runs)).toFixed(1)} (${span(range(runs), (v) => (100 * v).toFixed(1))})`
      : 'n/a';
    console.log(
      `  gateway${g.name || ''}: runs executed in the window per 100 requests ${perHundred}; CPU µs per run drained after it ${cpuText(g.samples.agent, 'cpuUsPerRun')}; accept CPU µs/req without the window's runs ${cpuText(g.samples.agent, 'acceptCpuUsPerRequest')}`,
    );
  }
}

/** Other processes' share of the machine during the measured windows. */
export function printNeighbours(targets) {
  const values = targets.flatMap((t) => t.samples.map((s) => s.othersCpu)).filter((v) => v !== null);
  if (values.length === 0) return;
  const r = range(values);
  console.log(
    `\nother processes used ${median(values).toFixed(1)} % of the machine (median over measured windows; ${r.min.toFixed(1)}–${r.max.toFixed(1)} %)${r.max > 5 ? ' — the machine was not quiet, figures are disturbed' : ''}`,
  );
}

export function printDrains(drains, timeoutSeconds) {
  const done = drains.filter((d) => d !== null);
  const text =
    done.length === drains.length
      ? `drained in ${span(range(done), (v) => v.toFixed(1))} s`
      : `${drains.length - done.length} of ${drains.length} NOT drained within ${timeoutSeconds} s`;
  console.log(`agent-run backlog after each gateway's agent load: ${text}`);
}
