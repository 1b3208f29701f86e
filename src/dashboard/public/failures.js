// @ts-check
/**
 * Failures in one place (docs/operating.md, "Dashboard"): failed and timed-out runs, failed
 * deliveries and failed completion callbacks, merged newest first, each with the first line of
 * its error and the action that fixes it — Retry for a run, Redeliver for a delivery. A
 * callback cannot be sent again through the admin API (a retry of its run sends a new one), so
 * its row links to the run.
 *
 * Four list reads per poll (`GET /api/runs?status=failed&view=summary`, `?status=timed_out`,
 * `GET /api/deliveries?status=failed`, `GET /api/callbacks?status=failed`), merged here: the
 * page needs nothing those lists do not give, so it has no endpoint of its own. The runs come as
 * summaries (the first line of each error), and delivery and callback errors are short already.
 */
import { ApiError, call, seg } from './api.js';
import { badge, fill, h, runLink, table, time } from './dom.js';

/** How many of each kind are read: the newest of each list. */
const PER_KIND = 100;

/**
 * What an action from this view led to, by row key (`run:<id>`, `delivery:<id>`), kept while
 * the tab lives so the row still shows it after leaving the view and coming back.
 * @type {Map<string, { kind: 'retry', runId: string, status?: string } | { kind: 'redeliver', runId: string, status?: string }>}
 */
const outcomes = new Map();

/**
 * One line of the view.
 * @typedef {object} Failure
 * @property {string} key `run:<id>`, `delivery:<id>` or `callback:<id>`
 * @property {'run' | 'delivery' | 'callback'} kind
 * @property {string} status the badge: the run's status, or `failed`
 * @property {string} at ISO time the failure was recorded
 * @property {string | null} runId
 * @property {import('./dom.js').Child} what what it belongs to
 * @property {string | null} error
 * @property {string} id the run, delivery or callback id
 */

/**
 * The first line of an error (the run's page, the deliveries list and the API have it whole).
 * @param {string | null | undefined} text
 */
function firstLine(text) {
  if (!text) return '';
  return String(text).split(/\r?\n/, 1)[0] ?? '';
}

/** @param {number} n @param {string} one @param {string} many */
const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/**
 * @param {import('./app.js').Shell} shell
 * @returns {import('./app.js').View}
 */
export function failuresView(shell) {
  let shown = '';
  const list = h('div', { id: 'failures-list', 'aria-live': 'polite' });
  const counts = h('span', { id: 'failures-counts', class: 'muted' });

  /** @param {string} runId @param {HTMLElement} button */
  const retry = (runId, button) =>
    shell.act(button, async () => {
      const answer = await call('POST', `api/runs/${seg(runId)}/retry`);
      outcomes.set(`run:${runId}`, { kind: 'retry', runId: answer.runId, status: 'queued' });
      shell.notify(['Retried: the new run is ', runLink(answer.runId), '.']);
    });
  /** @param {string} key @param {string} runId @param {HTMLElement} button */
  const redeliver = (key, runId, button) =>
    shell.act(button, async () => {
      await call('POST', `api/runs/${seg(runId)}/redeliver`);
      outcomes.set(key, { kind: 'redeliver', runId, status: 'pending' });
      shell.notify(['Redelivery of ', runLink(runId), ' queued.']);
    });

  const element = h(
    'section',
    { class: 'view', 'aria-labelledby': 'failures-title' },
    h('div', { class: 'toolbar' }, h('h2', { id: 'failures-title' }, 'Failures'), counts),
    h(
      'p',
      { class: 'muted small' },
      `Failed and timed-out runs, failed deliveries and failed callbacks, newest first (the newest ${PER_KIND} of each). `,
      'A callback cannot be sent again: retry its run, which sends a new one.',
    ),
    list,
  );

  return {
    name: 'failures',
    element,
    async refresh() {
      const [failed, timedOut, deliveries, callbacks] = await Promise.all([
        call('GET', 'api/runs', { status: 'failed', limit: PER_KIND, view: 'summary' }),
        call('GET', 'api/runs', { status: 'timed_out', limit: PER_KIND, view: 'summary' }),
        call('GET', 'api/deliveries', { status: 'failed', limit: PER_KIND }),
        call('GET', 'api/callbacks', { status: 'failed', limit: PER_KIND }),
      ]);
      await followOutcomes();
      const failures = merge(
        [...(failed.runs ?? []), ...(timedOut.runs ?? [])],
        deliveries.deliveries ?? [],
        callbacks.callbacks ?? [],
      );
      const key = JSON.stringify([failures.map(({ what: _what, ...rest }) => rest), [...outcomes]]);
      if (key === shown) return;
      shown = key;
      counts.textContent = [
        count((failed.runs?.length ?? 0) + (timedOut.runs?.length ?? 0), 'run', 'runs'),
        count(deliveries.deliveries?.length ?? 0, 'delivery', 'deliveries'),
        count(callbacks.callbacks?.length ?? 0, 'callback', 'callbacks'),
      ].join(' · ');
      const rows = failures.map((failure) => failureRow(failure, retry, redeliver));
      fill(
        list,
        table(
          ['When', 'What', 'Belongs to', 'Error (first line)', 'Fix'],
          rows,
          'No failures. Nothing to fix.',
        ),
      );
    },
  };
}

/** Reads where each action's result stands now, until it has ended. */
async function followOutcomes() {
  const open = [...outcomes.values()].filter(
    (outcome) => outcome.status === undefined || ['queued', 'running', 'pending'].includes(outcome.status),
  );
  await Promise.all(
    open.map(async (outcome) => {
      try {
        const run = await call('GET', `api/runs/${seg(outcome.runId)}`);
        outcome.status = outcome.kind === 'retry' ? run.status : run.delivery?.status;
      } catch (error) {
        // A run pruned meanwhile: the row keeps what it last knew. Anything else (a 401) is the view's.
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }
    }),
  );
}

/**
 * The three lists as rows, newest first (by when the failure was recorded).
 * @param {any[]} runs
 * @param {any[]} deliveries
 * @param {any[]} callbacks
 * @returns {Failure[]}
 */
function merge(runs, deliveries, callbacks) {
  /** @type {Failure[]} */
  const failures = [];
  for (const run of runs) {
    failures.push({
      key: `run:${run.runId}`,
      kind: 'run',
      status: run.status,
      at: run.finishedAt ?? run.createdAt,
      runId: run.runId,
      id: run.runId,
      what: [
        runLink(run.runId, true),
        h('span', { class: 'muted' }, ` ${run.source ?? ''}${run.name ? ` · ${run.name}` : ''}`),
      ],
      error: run.errorExcerpt,
    });
  }
  for (const delivery of deliveries) {
    failures.push({
      key: `delivery:${delivery.id}`,
      kind: 'delivery',
      status: 'failed',
      at: delivery.updatedAt,
      runId: delivery.runId,
      id: delivery.id,
      what: [
        delivery.runId
          ? runLink(delivery.runId, true)
          : h('span', { class: 'muted' }, 'heartbeat ', delivery.heartbeatId ?? ''),
        ' ',
        delivery.channel ?? '—',
        ' → ',
        h('code', {}, delivery.to ?? '—'),
      ],
      error: delivery.lastError,
    });
  }
  for (const callback of callbacks) {
    failures.push({
      key: `callback:${callback.id}`,
      kind: 'callback',
      status: 'failed',
      at: callback.updatedAt,
      runId: callback.runId,
      id: callback.id,
      what: [runLink(callback.runId, true), ' → ', h('code', {}, callback.origin)],
      error: callback.lastError,
    });
  }
  const when = (/** @type {Failure} */ failure) => Date.parse(failure.at) || 0;
  return failures.sort((a, b) => when(b) - when(a) || a.key.localeCompare(b.key));
}

/**
 * @param {Failure} failure
 * @param {(runId: string, button: HTMLElement) => Promise<void>} retry
 * @param {(key: string, runId: string, button: HTMLElement) => Promise<void>} redeliver
 */
function failureRow(failure, retry, redeliver) {
  const line = firstLine(failure.error);
  return h(
    'tr',
    {
      'data-kind': failure.kind,
      'data-id': failure.id,
      'data-run-id': failure.runId ?? undefined,
      'data-status': failure.status,
    },
    h('td', {}, time(failure.at)),
    h('td', {}, `${failure.kind} `, badge(failure.status)),
    h('td', {}, failure.what),
    h(
      'td',
      { class: 'excerpt failure-error' },
      line ? h('span', { class: 'bad' }, line) : h('span', { class: 'muted' }, '—'),
    ),
    h('td', { class: 'fix' }, fix(failure, retry, redeliver)),
  );
}

/**
 * The row's action, or what an action from here led to.
 * @param {Failure} failure
 * @param {(runId: string, button: HTMLElement) => Promise<void>} retry
 * @param {(key: string, runId: string, button: HTMLElement) => Promise<void>} redeliver
 */
function fix(failure, retry, redeliver) {
  const outcome = outcomes.get(failure.key);
  if (outcome?.kind === 'retry') {
    return h(
      'span',
      { class: 'outcome' },
      'retried → ',
      runLink(outcome.runId, true),
      ' ',
      badge(outcome.status),
    );
  }
  if (outcome?.kind === 'redeliver') {
    return h('span', { class: 'outcome' }, 'redelivered → ', badge(outcome.status));
  }
  const { runId } = failure;
  if (failure.kind === 'run' && runId) {
    const button = h('button', { type: 'button', class: 'small', 'data-action': 'retry' }, 'Retry');
    button.addEventListener('click', () => retry(runId, button));
    return button;
  }
  if (failure.kind === 'delivery') {
    // A heartbeat's reply has no run to redeliver from.
    if (!runId) return h('span', { class: 'muted' }, 'cannot be redelivered');
    const button = h('button', { type: 'button', class: 'small', 'data-action': 'redeliver' }, 'Redeliver');
    button.addEventListener('click', () => redeliver(failure.key, runId, button));
    return button;
  }
  // No admin action sends a callback again: the run's page, where Retry sends a new one.
  return runId
    ? h('a', { href: `#/runs/${encodeURIComponent(runId)}`, 'data-action': 'open-run' }, 'Open run')
    : null;
}
