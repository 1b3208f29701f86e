// Summaries over rounds: the median says where a target is, min–max how much the
// machine moved it, and per-round ratios (each round's target over the same
// round's baseline) how much of that movement the comparison cancels out.

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export const range = (values) => ({ min: Math.min(...values), max: Math.max(...values) });

/** Median and range of one metric over the rounds of one target. */
export function spreadOf(samples, metric) {
  const values = samples.map((s) => s[metric]);
  return { median: median(values), ...range(values) };
}

/** Ratio of medians, and the range of the paired per-round ratios. */
export function ratioTo(samples, baseline) {
  const perRound = samples.map((s, i) => s.rps / baseline[i].rps);
  return {
    medians: median(samples.map((s) => s.rps)) / median(baseline.map((s) => s.rps)),
    ...range(perRound),
  };
}

export const sum = (samples, metric) => samples.reduce((total, s) => total + s[metric], 0);
