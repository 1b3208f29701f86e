// @ts-check
/**
 * Usage (docs/usage.md, "The dashboard's Usage view"): the tokens and cost of the runs that
 * finished in the last 24 h (by UTC hour), 7 or 30 days (by UTC day), per hook — two stacked
 * bar charts over time (cost, and input + output tokens), the five costliest hooks each in its
 * own colour and the rest as "other", and a table of every hook's totals below.
 *
 * One read per poll: `GET /api/usage?by=hook&bucket=…`; the table's totals are the buckets
 * summed here, so they cover exactly what the charts show. The charts are inline SVG built
 * with DOM calls, not a chart library: the page loads no script but its own files (its CSP)
 * and has no build step. Hook names come from the API: they go in as text only.
 */
import { call } from './api.js';
import { fill, h, table } from './dom.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The ranges offered: how far back, and the bucket that splits it. */
const RANGES = {
  '24h': { label: 'last 24 hours, by hour', back: DAY, bucket: 'hour', length: HOUR },
  '7d': { label: 'last 7 days, by day', back: 7 * DAY, bucket: 'day', length: DAY },
  '30d': { label: 'last 30 days, by day', back: 30 * DAY, bucket: 'day', length: DAY },
};
/** @typedef {keyof typeof RANGES} RangeName */

/** The hooks drawn in their own colour; the others are summed as one "other" series. */
const TOP_HOOKS = 5;
/** The series key of the rest: not a string, so no hook can be named like it. */
const OTHER = Symbol('other');

/**
 * @typedef {object} UsageRow one row of `GET /api/usage`
 * @property {string | null} key
 * @property {string} [at]
 * @property {number} runs
 * @property {number} inputTokens
 * @property {number} outputTokens
 * @property {number} cacheReadTokens
 * @property {number} cacheWriteTokens
 * @property {number | null} costUsd
 */

const integer = new Intl.NumberFormat('en-US');
const dollars = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 6,
});
/** @param {number | null} cost */
const money = (cost) => (cost === null ? '—' : dollars.format(cost));
/** @param {string | null} key */
const hookName = (key) => key ?? '(no hook)';
/** @param {UsageRow} row */
const tokensOf = (row) => row.inputTokens + row.outputTokens;

/**
 * Rows summed; the cost sums the priced ones and stays null when none was (as the API's).
 * @param {string | null} key
 * @param {UsageRow[]} rows
 * @returns {UsageRow}
 */
function sum(key, rows) {
  /** @type {UsageRow} */
  const total = {
    key,
    runs: 0,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: null,
  };
  for (const row of rows) {
    total.runs += row.runs;
    total.inputTokens += row.inputTokens;
    total.outputTokens += row.outputTokens;
    total.cacheReadTokens += row.cacheReadTokens;
    total.cacheWriteTokens += row.cacheWriteTokens;
    if (row.costUsd !== null) total.costUsd = (total.costUsd ?? 0) + row.costUsd;
  }
  return total;
}

/** The API's order: the costliest first (unpriced last), then the most tokens, then by name. */
const costliest = (/** @type {UsageRow} */ a, /** @type {UsageRow} */ b) =>
  (b.costUsd ?? -1) - (a.costUsd ?? -1) ||
  tokensOf(b) - tokensOf(a) ||
  hookName(a.key).localeCompare(hookName(b.key));

/**
 * @param {import('./app.js').Shell} shell
 * @param {URLSearchParams} params the route's query: range
 * @returns {import('./app.js').View}
 */
export function usageView(shell, params) {
  /** @type {RangeName} */
  let range = /** @type {RangeName} */ (
    Object.hasOwn(RANGES, params.get('range') ?? '') ? params.get('range') : '24h'
  );
  let shown = '';

  const choice = h(
    'select',
    { id: 'usage-range', 'aria-label': 'Range' },
    Object.entries(RANGES).map(([value, { label }]) =>
      h('option', { value, selected: value === range }, label),
    ),
  );
  choice.addEventListener('change', () => {
    range = /** @type {RangeName} */ (/** @type {HTMLSelectElement} */ (choice).value);
    shell.replaceQuery('/usage', { range });
    shell.refreshNow();
  });
  const body = h('div', { id: 'usage-body', 'aria-live': 'polite' });
  const element = h(
    'section',
    { class: 'view', 'aria-labelledby': 'usage-title' },
    h('div', { class: 'toolbar' }, h('h2', { id: 'usage-title' }, 'Usage'), choice),
    h(
      'p',
      { class: 'muted small' },
      'Model usage and cost of the runs that finished in the range, per hook; buckets are UTC hours or days. ',
      'Cost sums the priced runs: "—" when none was (models.providers.<name>.prices).',
    ),
    body,
  );

  return {
    name: 'usage',
    element,
    async refresh() {
      const asked = range;
      const { back, bucket, length } = RANGES[asked];
      const until = Date.now();
      const since = until - back;
      const answer = await call('GET', 'api/usage', {
        by: 'hook',
        bucket,
        since: new Date(since).toISOString(),
        until: new Date(until).toISOString(),
      });
      if (asked !== range) return; // switched meanwhile: the next poll reads the new range
      /** @type {UsageRow[]} */
      const rows = answer.usage ?? [];
      // Every bucket the range touches, oldest first: the first one began before `since`.
      const slots = [];
      for (let at = since - (since % length); at < until; at += length) slots.push(at);
      const key = JSON.stringify([asked, slots[0], rows]);
      if (key === shown) return;
      shown = key;
      fill(body, render(rows, slots, RANGES[asked]));
    },
  };
}

/**
 * @param {UsageRow[]} rows
 * @param {number[]} slots
 * @param {(typeof RANGES)[RangeName]} range
 */
function render(rows, slots, range) {
  if (rows.length === 0) {
    return h(
      'p',
      { class: 'empty', id: 'usage-empty' },
      `No runs finished in the ${range.label.split(',')[0]}.`,
    );
  }
  /** @type {Map<string | null, UsageRow[]>} */
  const byHook = new Map();
  for (const row of rows) byHook.set(row.key, [...(byHook.get(row.key) ?? []), row]);
  const totals = [...byHook].map(([hook, of]) => sum(hook, of)).sort(costliest);
  /** @type {(string | null | typeof OTHER)[]} */
  const series = totals.slice(0, TOP_HOOKS).map((total) => total.key);
  if (totals.length > TOP_HOOKS) series.push(OTHER);
  const seriesOf = (/** @type {string | null} */ hook) => (series.includes(hook) ? hook : OTHER);
  const others = totals.length - TOP_HOOKS;
  const label = (/** @type {string | null | typeof OTHER} */ s) =>
    s === OTHER ? `other (${others} ${others === 1 ? 'hook' : 'hooks'})` : hookName(s);

  // The cells: per bucket, per series, the rows summed.
  /** @type {Map<number, Map<string | null | typeof OTHER, UsageRow>>} */
  const cells = new Map();
  for (const at of slots) {
    /** @type {Map<string | null | typeof OTHER, UsageRow[]>} */
    const parts = new Map();
    for (const row of rows) {
      if (Date.parse(row.at ?? '') !== at) continue;
      const s = seriesOf(row.key);
      parts.set(s, [...(parts.get(s) ?? []), row]);
    }
    cells.set(at, new Map([...parts].map(([s, of]) => [s, sum(s === OTHER ? null : s, of)])));
  }
  const chart = { slots, series, cells, label, hourly: range.length === HOUR };

  return [
    h(
      'ul',
      { class: 'legend', id: 'usage-legend' },
      series.map((s, i) => h('li', {}, h('span', { class: `swatch series-${i}` }), label(s))),
    ),
    barChart(chart, 'cost', 'Cost (USD)', (row) => row.costUsd ?? 0, money),
    barChart(chart, 'tokens', 'Tokens (input + output)', tokensOf, (n) => integer.format(n)),
    h(
      'div',
      { id: 'usage-table' },
      table(
        ['Hook', 'Runs', 'Input', 'Output', 'Cache read', 'Cache write', 'Cost'],
        totals.map((total) =>
          h(
            'tr',
            {},
            h('td', {}, hookName(total.key)),
            [
              total.runs,
              total.inputTokens,
              total.outputTokens,
              total.cacheReadTokens,
              total.cacheWriteTokens,
            ].map((n) => h('td', { class: 'num' }, integer.format(n))),
            h('td', { class: 'num' }, money(total.costUsd)),
          ),
        ),
        '',
      ),
    ),
  ];
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * An SVG element; children are elements or text (text nodes: never parsed).
 * @param {string} tag
 * @param {Record<string, string | number>} [attributes]
 * @param {...(Node | string)} children
 */
function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/** @param {number} n */
const two = (n) => String(n).padStart(2, '0');

/**
 * A bucket's start in UTC: `2026-11-28 15:00 UTC` by the hour, `2026-11-28` by the day.
 * @param {number} at
 * @param {boolean} hourly
 */
function slotName(at, hourly) {
  const date = new Date(at);
  const day = `${date.getUTCFullYear()}-${two(date.getUTCMonth() + 1)}-${two(date.getUTCDate())}`;
  return hourly ? `${day} ${two(date.getUTCHours())}:00 UTC` : day;
}

/** @param {UsageRow} row */
const figures = (row) =>
  `${integer.format(row.runs)} ${row.runs === 1 ? 'run' : 'runs'} · ` +
  `${integer.format(tokensOf(row))} tokens (${integer.format(row.inputTokens)} in, ` +
  `${integer.format(row.outputTokens)} out) · ${money(row.costUsd)}`;

const WIDTH = 720;
const HEIGHT = 170;
const PAD = { left: 78, right: 8, top: 8, bottom: 22 };

/**
 * One stacked bar per bucket (`g.bucket`, its figures in its `<title>`), one segment per series
 * (`rect`, the hook's figures in its own `<title>`); the y axis at 0, half and the tallest bar.
 * @param {{ slots: number[], series: (string | null | typeof OTHER)[], cells: Map<number, Map<string | null | typeof OTHER, UsageRow>>, label: (s: string | null | typeof OTHER) => string, hourly: boolean }} chart
 * @param {string} id
 * @param {string} title
 * @param {(row: UsageRow) => number} value
 * @param {(n: number) => string} format
 */
function barChart(chart, id, title, value, format) {
  const { slots, series, cells, label, hourly } = chart;
  const totals = slots.map((at) =>
    [...(cells.get(at)?.values() ?? [])].reduce((n, row) => n + value(row), 0),
  );
  const top = Math.max(...totals) || 1;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slotWidth = (WIDTH - PAD.left - PAD.right) / slots.length;
  const y = (/** @type {number} */ n) => PAD.top + plotHeight - (n / top) * plotHeight;

  const axis = [0, top / 2, top].map((tick) =>
    svg(
      'g',
      { class: 'tick' },
      svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(tick), y2: y(tick) }),
      svg(
        'text',
        { x: PAD.left - 6, y: y(tick), 'text-anchor': 'end', 'dominant-baseline': 'middle' },
        format(tick),
      ),
    ),
  );
  // A label under every few bars, about eight in all.
  const every = Math.ceil(slots.length / 8);
  const bars = slots.map((at, i) => {
    const x = PAD.left + i * slotWidth;
    const bucket = cells.get(at) ?? new Map();
    const bar = svg(
      'g',
      { class: 'bucket', 'data-at': new Date(at).toISOString() },
      svg(
        'title',
        {},
        `${slotName(at, hourly)}: ${bucket.size ? figures(sum(null, [...bucket.values()])) : 'no runs'}`,
      ),
    );
    let base = 0;
    series.forEach((s, index) => {
      const row = bucket.get(s);
      if (!row) return;
      const height = (value(row) / top) * plotHeight;
      base += value(row);
      bar.append(
        svg(
          'rect',
          {
            class: `series-${index}`,
            x: x + slotWidth * 0.15,
            width: slotWidth * 0.7,
            y: y(base),
            height: Math.max(height, 0),
          },
          svg('title', {}, `${label(s)} · ${slotName(at, hourly)}: ${figures(row)}`),
        ),
      );
    });
    if (i % every === 0) {
      const name = slotName(at, hourly);
      bar.append(
        svg(
          'text',
          { class: 'slot', x: x + slotWidth / 2, y: HEIGHT - 6, 'text-anchor': 'middle' },
          hourly ? name.slice(11, 16) : name.slice(5),
        ),
      );
    }
    return bar;
  });
  return h(
    'figure',
    { class: 'chart' },
    h('figcaption', {}, `${title} per ${hourly ? 'hour' : 'day'} (UTC)`),
    svg(
      'svg',
      {
        id: `usage-${id}`,
        viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
        role: 'img',
        'aria-label': `${title} per bucket`,
      },
      ...axis,
      ...bars,
    ),
  );
}
