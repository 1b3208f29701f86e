/**
 * A strict reader of the Prometheus text exposition format 0.0.4 (prom-client
 * has a writer but no parser): every line must be a `# HELP`, a `# TYPE`, a
 * blank line or a sample; names and label names must be valid; label values
 * must be escaped; a sample must belong to a family declared by `# TYPE`
 * before it (histograms: `_bucket` with `le`, `_sum`, `_count`); no series may
 * appear twice. Throws naming the first offending line.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string | undefined;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const lines = text.slice(0, -1).split('\n');
  for (const [index, line] of lines.entries()) {
    const where = `line ${index + 1}: ${JSON.stringify(line)}`;
    if (line === '') continue;
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!match) {
        if (/^# (HELP|TYPE)\b/.test(line)) throw new Error(`malformed ${where}`);
        continue; // a comment
      }
      const [, keyword, name, rest] = match as unknown as [string, string, string, string];
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name at ${where}`);
      const family = families.get(name) ?? { name, type: 'untyped', help: undefined, samples: [] };
      if (keyword === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`unknown type at ${where}`);
        if (family.samples.length > 0) throw new Error(`TYPE after samples at ${where}`);
        family.type = rest as Family['type'];
      } else {
        if (family.help !== undefined) throw new Error(`second HELP at ${where}`);
        family.help = rest;
      }
      families.set(name, family);
      continue;
    }
    const sample = parseSample(line, where);
    const family = familyOf(families, sample.name);
    if (!family) throw new Error(`sample before its # TYPE at ${where}`);
    if (family.type === 'histogram' && sample.name === `${family.name}_bucket` && !('le' in sample.labels)) {
      throw new Error(`histogram bucket without le at ${where}`);
    }
    const series = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seen.has(series)) throw new Error(`duplicate series at ${where}`);
    seen.add(series);
    family.samples.push(sample);
  }
  return families;
}

function familyOf(families: Map<string, Family>, sampleName: string): Family | undefined {
  const exact = families.get(sampleName);
  if (exact && exact.type !== 'histogram' && exact.type !== 'summary') return exact;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sampleName.endsWith(suffix)) continue;
    const family = families.get(sampleName.slice(0, -suffix.length));
    if (family && (family.type === 'histogram' || (family.type === 'summary' && suffix !== '_bucket'))) {
      return family;
    }
  }
  return exact;
}

function parseSample(line: string, where: string): Sample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!nameMatch) throw new Error(`bad sample name at ${where}`);
  const name = nameMatch[0];
  let at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === '{') {
    at++;
    while (line[at] !== '}') {
      const labelMatch = /^([^=]*)="/.exec(line.slice(at));
      if (!labelMatch) throw new Error(`bad label at ${where}`);
      const labelName = labelMatch[1] as string;
      if (!LABEL_NAME.test(labelName)) throw new Error(`bad label name at ${where}`);
      if (labelName in labels) throw new Error(`repeated label at ${where}`);
      at += labelMatch[0].length;
      let value = '';
      for (;;) {
        const char = line[at];
        if (char === undefined) throw new Error(`unterminated label value at ${where}`);
        at++;
        if (char === '"') break;
        if (char === '\\') {
          const escaped = line[at++];
          if (escaped === '\\') value += '\\';
          else if (escaped === '"') value += '"';
          else if (escaped === 'n') value += '\n';
          else throw new Error(`bad escape at ${where}`);
        } else value += char;
      }
      labels[labelName] = value;
      if (line[at] === ',') at++;
      else if (line[at] !== '}') throw new Error(`expected , or } at ${where}`);
    }
    at++;
  }
  const rest = line.slice(at);
  const valueMatch = /^ (\S+)(?: (-?\d+))?$/.exec(rest);
  if (!valueMatch) throw new Error(`bad value at ${where}`);
  return { name, labels, value: parseValue(valueMatch[1] as string, where) };
}

function parseValue(raw: string, where: string): number {
  // Prometheus reads values with Go's ParseFloat: NaN and Inf in any case (prom-client writes `Nan`).
  if (/^nan$/i.test(raw)) return Number.NaN;
  if (/^\+?inf$/i.test(raw)) return Number.POSITIVE_INFINITY;
  if (/^-inf$/i.test(raw)) return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`bad number at ${where}`);
  return Number(raw);
}

/** The value of one series, or undefined when absent. */
export function sampleValue(
  families: Map<string, Family>,
  sampleName: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const family of families.values()) {
    for (const sample of family.samples) {
      if (sample.name !== sampleName) continue;
      const keys = Object.keys(sample.labels);
      if (keys.length !== Object.keys(labels).length) continue;
      if (keys.every((key) => sample.labels[key] === labels[key])) return sample.value;
    }
  }
  return undefined;
}

/** The series of one sample name, as `labels → value` lines for exact comparison. */
export function seriesOf(families: Map<string, Family>, sampleName: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const family of families.values()) {
    for (const sample of family.samples) {
      if (sample.name !== sampleName) continue;
      const key = Object.entries(sample.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      out[key] = sample.value;
    }
  }
  return out;
}
