// @ts-check
/** Deliveries of replies to chat channels: failed ones first, each with Redeliver. */
import { call, seg } from './api.js';
import { badge, fill, h, runLink, table, textBlock, time } from './dom.js';

const STATUSES = ['failed', 'pending', 'delivered'];

/**
 * @param {import('./app.js').Shell} shell
 * @param {URLSearchParams} params the route's query: status ('' for all; failed by default)
 * @returns {import('./app.js').View}
 */
export function deliveriesView(shell, params) {
  const wanted = params.get('status');
  let status = wanted === null ? 'failed' : STATUSES.includes(wanted) ? wanted : '';
  let shown = '';

  const select = h(
    'select',
    { id: 'deliveries-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'any status'),
    STATUSES.map((value) => h('option', { value, selected: value === status }, value)),
  );
  select.addEventListener('change', () => {
    status = /** @type {HTMLSelectElement} */ (select).value;
    shell.replaceQuery('/deliveries', { status: status === '' ? 'any' : status });
    shell.refreshNow();
  });
  const list = h('div', { id: 'deliveries-list' });

  /** @param {string} runId @param {HTMLElement} button */
  const redeliver = (runId, button) =>
    shell.act(button, async () => {
      await call('POST', `api/runs/${seg(runId)}/redeliver`);
      shell.notify(['Redelivery of ', runLink(runId), ' queued.']);
      shell.refreshNow();
    });

  const element = h(
    'section',
    { class: 'view', 'aria-labelledby': 'deliveries-title' },
    h('h2', { id: 'deliveries-title' }, 'Deliveries'),
    h('div', { class: 'toolbar' }, select, h('span', { class: 'muted' }, 'newest first, up to 200')),
    list,
  );

  return {
    name: 'deliveries',
    element,
    async refresh() {
      const answer = await call('GET', 'api/deliveries', { status, limit: 200 });
      const key = JSON.stringify(answer.deliveries);
      if (key === shown) return;
      shown = key;
      const rows = (answer.deliveries ?? []).map((/** @type {any} */ delivery) => {
        // A heartbeat's reply has no run to redeliver from.
        const button = delivery.runId
          ? h('button', { type: 'button', class: 'small', 'data-run-id': delivery.runId }, 'Redeliver')
          : null;
        button?.addEventListener('click', () => redeliver(delivery.runId, button));
        const origin = delivery.runId
          ? runLink(delivery.runId, true)
          : h('span', { class: 'muted' }, 'heartbeat ', delivery.heartbeatId ?? '');
        return h(
          'tr',
          { 'data-status': delivery.status, 'data-run-id': delivery.runId ?? undefined },
          h('td', {}, time(delivery.updatedAt)),
          h('td', {}, origin),
          h('td', {}, delivery.channel ?? '—'),
          h('td', {}, h('code', {}, delivery.to ?? '—')),
          h('td', {}, badge(delivery.status)),
          h('td', { class: 'num' }, delivery.attempts ?? '—'),
          h('td', { class: 'wide' }, delivery.lastError ? textBlock(delivery.lastError, 'error') : '—'),
          h('td', {}, delivery.status === 'pending' ? null : button),
        );
      });
      const empty = status === 'failed' ? 'No failed deliveries.' : 'No deliveries here.';
      fill(
        list,
        table(['Updated', 'Run', 'Channel', 'To', 'Status', 'Attempts', 'Last error', ''], rows, empty),
      );
    },
  };
}
