// @ts-check
/** A main session: its system events (pending and consumed) and its heartbeats. */
import { ApiError, call, seg } from './api.js';
import { badge, duration, fill, h, table, textBlock, time } from './dom.js';

export const DEFAULT_SESSION = 'agent:main:main';
const PAGE = 1000;
const EVENTS_SHOWN = 200;

/**
 * @param {import('./app.js').Shell} shell
 * @param {URLSearchParams} params the route's query: key
 * @returns {import('./app.js').View}
 */
export function sessionView(shell, params) {
  let sessionKey = params.get('key') || DEFAULT_SESSION;
  const events = new EventLog();
  let shown = '';

  const input = h('input', {
    id: 'session-key',
    type: 'text',
    value: sessionKey,
    'aria-label': 'Main session key',
    spellcheck: 'false',
  });
  input.addEventListener('change', () => {
    sessionKey = /** @type {HTMLInputElement} */ (input).value.trim() || DEFAULT_SESSION;
    shell.replaceQuery('/session', { key: sessionKey === DEFAULT_SESSION ? '' : sessionKey });
    shell.refreshNow();
  });
  const heartbeats = h('div', { id: 'heartbeats' });
  const eventList = h('div', { id: 'events' });
  const eventCount = h('span', { class: 'muted' });

  const element = h(
    'section',
    { class: 'view', 'aria-labelledby': 'session-title' },
    h('h2', { id: 'session-title' }, 'Main session'),
    h('div', { class: 'toolbar' }, h('label', { for: 'session-key' }, 'Session key'), input),
    h('h3', {}, 'Heartbeats ', h('span', { class: 'muted' }, 'newest first, up to 50')),
    heartbeats,
    h('h3', {}, 'System events ', eventCount),
    eventList,
  );

  return {
    name: 'session',
    element,
    async refresh() {
      const key = sessionKey;
      const [beats] = await Promise.all([
        call('GET', `api/sessions/${seg(key)}/heartbeats`, { limit: 50 }),
        events.update(key),
      ]);
      if (key !== sessionKey) return;
      const all = events.list;
      const pending = all.filter((event) => event.status === 'pending').length;
      eventCount.textContent = `${all.length} in all, ${pending} pending; newest first${all.length > EVENTS_SHOWN ? `, the newest ${EVENTS_SHOWN} shown` : ''}`;
      const state = JSON.stringify([beats.heartbeats, all.length, all.at(-1)?.id, pending]);
      if (state === shown) return;
      shown = state;
      fill(heartbeats, heartbeatTable([...(beats.heartbeats ?? [])].reverse()));
      fill(eventList, eventTable(all.slice(-EVENTS_SHOWN).reverse()));
    },
  };
}

/**
 * The session's events, kept in the page and read incrementally: the API gives
 * them oldest first and pages forward with `after`, so each poll asks only from
 * just before the oldest event still pending (whose status may change) onwards.
 */
class EventLog {
  constructor() {
    /** @type {any[]} */
    this.list = [];
    /** The session `list` belongs to. */
    this.key = '';
  }

  /**
   * @param {string} sessionKey
   * @returns {Promise<void>}
   */
  async update(sessionKey) {
    if (sessionKey !== this.key) {
      this.key = sessionKey;
      this.list = [];
    }
    const firstPending = this.list.findIndex((event) => event.status === 'pending');
    const keep = firstPending === -1 ? this.list.length : firstPending;
    let after = keep > 0 ? this.list[keep - 1].id : undefined;
    /** @type {any[]} */
    const fresh = [];
    for (;;) {
      /** @type {any} */
      let page;
      try {
        page = await call('GET', `api/sessions/${seg(sessionKey)}/events`, { limit: PAGE, after });
      } catch (error) {
        // The event we page from is gone (pruned): read the session again from its start.
        if (after !== undefined && error instanceof ApiError && error.status === 400) {
          if (this.key !== sessionKey) return;
          this.list = [];
          return this.update(sessionKey);
        }
        throw error;
      }
      fresh.push(...page.events);
      if (page.events.length < PAGE) break;
      after = page.events.at(-1).id;
    }
    // The key changed while this read was under way: its events are not this session's.
    if (this.key === sessionKey) this.list = [...this.list.slice(0, keep), ...fresh];
  }
}

/** @param {any[]} beats newest first */
function heartbeatTable(beats) {
  const rows = beats.map((beat) =>
    h(
      'tr',
      { 'data-status': beat.status },
      h('td', {}, time(beat.startedAt)),
      h('td', {}, duration(beat.startedAt, beat.finishedAt)),
      h('td', {}, badge(beat.status)),
      h('td', { class: 'num' }, beat.eventCount),
      h(
        'td',
        { class: 'wide' },
        beat.status === 'failed' ? textBlock(beat.error, 'error') : textBlock(beat.reply),
      ),
      h('td', {}, badge(beat.delivery?.status)),
    ),
  );
  return table(
    ['Started', 'Took', 'Status', 'Events', 'Reply or error', 'Delivery'],
    rows,
    'No heartbeats yet.',
  );
}

/** @param {any[]} events newest first */
function eventTable(events) {
  const rows = events.map((event) =>
    h(
      'tr',
      { 'data-status': event.status },
      h('td', {}, time(event.ts)),
      h('td', {}, event.source),
      h('td', {}, badge(event.status)),
      h('td', { class: 'wide' }, textBlock(event.text)),
    ),
  );
  return table(['Time', 'Source', 'Status', 'Text'], rows, 'No system events in this session.');
}
