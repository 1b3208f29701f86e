// @ts-check
/**
 * Building the page from API data. Everything from the API goes in as text
 * nodes or attribute values (never as HTML), so no reply, error or session key
 * can become markup or script.
 */

/** @typedef {Node | string | number | null | undefined | false | unknown[]} Child (arrays hold Child too, at any depth) */

/**
 * An element with attributes, `on<event>` listeners and children.
 * @param {string} tag
 * @param {Record<string, string | number | boolean | undefined | EventListener>} [props]
 * @param {...Child} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

/**
 * @param {Element} parent
 * @param {Child[]} children
 */
function append(parent, children) {
  for (const child of /** @type {unknown[]} */ (children).flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

/**
 * Replaces an element's content.
 * @param {Element} parent
 * @param {...Child} children
 */
export function fill(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * A link inside the dashboard (hash routes only: nothing leaves the page).
 * @param {string} route e.g. '/runs/<id>'
 * @param {Child} label
 * @param {string} [className]
 */
export function link(route, label, className) {
  return h('a', { href: `#${route}`, class: className }, label);
}

/**
 * A link to a run; `short` shows only the id's random end (ids are `run_<uuidv7>`,
 * whose start is the time and alike between neighbours), the whole id as tooltip.
 * @param {string} id
 * @param {boolean} [short]
 */
export function runLink(id, short = false) {
  const anchor = link(
    `/runs/${encodeURIComponent(id)}`,
    short && id.length > 20 ? `…${id.slice(-12)}` : id,
    'id',
  );
  anchor.title = id;
  return anchor;
}

/**
 * A status word with its colour class (`status-failed`, …).
 * @param {string | null | undefined} status
 */
export function badge(status) {
  const word = status ?? 'none';
  return h('span', { class: `badge status-${word.replace(/[^a-z_]/g, '')}` }, word);
}

/** @param {number} n */
const two = (n) => String(n).padStart(2, '0');

/**
 * A timestamp in local time: the time alone today, the date and time before; the
 * ISO value as the tooltip.
 * @param {string | null | undefined} iso
 */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h('span', {}, iso);
  const clock = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  const today = new Date().toDateString() === date.toDateString();
  const day = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}`;
  return h('time', { datetime: iso, title: iso }, today ? clock : `${day} ${clock}`);
}

/**
 * How long something took (or has been taking, when it has not ended).
 * @param {string | null | undefined} from
 * @param {string | null | undefined} to
 */
export function duration(from, to) {
  if (!from) return '—';
  const ms = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  if (!Number.isFinite(ms)) return '—';
  const text =
    ms < 1000
      ? `${Math.max(0, ms)} ms`
      : ms < 120_000
        ? `${(ms / 1000).toFixed(1)} s`
        : `${Math.round(ms / 60_000)} min`;
  return to ? text : `${text}…`;
}

/**
 * A block of text from the API (message, reply, error), or a dash.
 * @param {string | null | undefined} text
 * @param {string} [className]
 */
export function textBlock(text, className = '') {
  if (text === null || text === undefined || text === '') return h('p', { class: 'muted' }, '—');
  return h('pre', { class: `text ${className}` }, text);
}

/**
 * A table; `rows` empty shows `empty` instead.
 * @param {string[]} headings
 * @param {HTMLElement[]} rows
 * @param {string} empty
 */
export function table(headings, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headings.map((heading) => h('th', { scope: 'col' }, heading)),
      ),
    ),
    h('tbody', {}, rows),
  );
}

/**
 * A definition list of label → value pairs; pairs whose value is undefined are left out.
 * @param {[string, Child][]} pairs
 */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs
      .filter(([, value]) => value !== undefined)
      .map(([label, value]) => [h('dt', {}, label), h('dd', {}, value ?? '—')]),
  );
}
