// @ts-check
/**
 * The runs list: newest first, filtered by status, hook and hook token, paged by `before`.
 * Filtered to failed or timed-out runs, it offers to retry them all (docs/operating.md,
 * "Bulk retry"): a dry run counts them first, and nothing is retried until that count is confirmed.
 */
import { call, workStanding } from './api.js';
import { badge, duration, fill, h, runLink, table, time } from './dom.js';

/** The statuses a bulk retry takes (`POST /api/runs/retry`). */
const RETRYABLE = ['failed', 'timed_out'];

/**
 * Where each run the list showed came from (source, name, retryOf): the run's own
 * answer (GET /api/runs/{id}, the RunView) does not carry them, so its
 * page fills them in from here when the operator came through the list.
 * @type {Map<string, { source?: string, name?: string | null, retryOf?: string | null }>}
 */
const origins = new Map();
const ORIGINS_KEPT = 1000;

/**
 * @param {string} runId
 * @param {{ source?: string, name?: string | null, retryOf?: string | null }} origin
 */
export function remember(runId, { source, name, retryOf }) {
  origins.delete(runId);
  origins.set(runId, { source, name, retryOf });
  if (origins.size > ORIGINS_KEPT) origins.delete(origins.keys().next().value ?? '');
}

/** @param {string} runId */
export const originOf = (runId) => origins.get(runId);

export const RUN_STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'timed_out'];
const PAGE_SIZES = [20, 50, 100, 200];
/** At most this many runs per bulk retry: the API's default limit. */
const BULK_RETRY_LIMIT = 100;
/** A hook token's id (docs/senders.md); the gateway refuses any other `tokenId` with its sentence. */
const TOKEN_ID = '[a-z0-9_-]{1,64}';

/**
 * @param {import('./app.js').Shell} shell
 * @param {URLSearchParams} params the route's query: status, source, tokenId, limit
 * @returns {import('./app.js').View}
 */
export function runsView(shell, params) {
  const filter = {
    status: RUN_STATUSES.includes(params.get('status') ?? '') ? (params.get('status') ?? '') : '',
    source: params.get('source') ?? '',
    tokenId: params.get('tokenId') ?? '',
    limit: PAGE_SIZES.includes(Number(params.get('limit'))) ? Number(params.get('limit')) : 50,
  };
  /** The `before` cursor of each page shown so far; the last one is the current page. */
  let pages = [/** @type {string | undefined} */ (undefined)];
  /** @type {string | null} */
  let next = null;
  let shown = '';

  const status = h(
    'select',
    { id: 'runs-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'any status'),
    RUN_STATUSES.map((value) => h('option', { value, selected: value === filter.status }, value)),
  );
  const source = h('input', {
    id: 'runs-source',
    type: 'search',
    placeholder: 'hook, e.g. hook:agent',
    value: filter.source,
    'aria-label': 'Hook',
    spellcheck: 'false',
  });
  // The id, never the token itself: it goes into the address and the API request's URL.
  const token = h('input', {
    id: 'runs-token',
    type: 'search',
    placeholder: 'token id, e.g. default',
    value: filter.tokenId,
    pattern: TOKEN_ID,
    'aria-label': 'Hook token id',
    title: 'Only runs accepted with the hook token of this id (default: hooks.token)',
    spellcheck: 'false',
    autocomplete: 'off',
  });
  const size = h(
    'select',
    { id: 'runs-limit', 'aria-label': 'Runs per page' },
    PAGE_SIZES.map((value) => h('option', { value, selected: value === filter.limit }, `${value} per page`)),
  );
  const newer = h('button', { type: 'button', id: 'runs-newer', disabled: true }, '← Newer');
  const older = h('button', { type: 'button', id: 'runs-older', disabled: true }, 'Older →');
  const newest = h('button', { type: 'button', id: 'runs-newest', disabled: true }, 'Newest');
  const retryThese = h(
    'button',
    {
      type: 'button',
      id: 'runs-retry',
      hidden: true,
      title: 'Retry every run of this status and hook that was not retried yet, each as a new run',
    },
    'Retry these',
  );
  const confirmRetry = h('button', { type: 'button', id: 'runs-retry-confirm', class: 'primary' }, 'Retry');
  const cancelRetry = h('button', { type: 'button', id: 'runs-retry-cancel' }, 'Cancel');
  const retryQuestion = h('span', { id: 'runs-retry-question' });
  const retryPanel = h(
    'div',
    {
      id: 'runs-retry-panel',
      class: 'toolbar confirm',
      role: 'alertdialog',
      'aria-live': 'polite',
      hidden: true,
    },
    retryQuestion,
    h('span', { class: 'grow' }),
    cancelRetry,
    confirmRetry,
  );
  /** The filter the open question counted, retried as is on confirm. @type {Record<string, string> | null} */
  let asked = null;
  const closeRetry = () => {
    asked = null;
    retryPanel.hidden = true;
  };
  /** Only for a status a bulk retry takes, and without a token filter (the API has none). */
  const showRetryAction = () => {
    retryThese.hidden = !RETRYABLE.includes(filter.status) || filter.tokenId !== '';
    if (retryThese.hidden) closeRetry();
  };
  showRetryAction();
  retryThese.addEventListener('click', () =>
    shell.act(retryThese, async () => {
      const request = { status: filter.status, ...(filter.source ? { source: filter.source } : {}) };
      const answer = await call('POST', 'api/runs/retry', {}, { ...request, dryRun: true });
      const what = `${filter.status === 'failed' ? 'failed' : 'timed-out'} run${answer.matched === 1 ? '' : 's'}`;
      const where = filter.source ? ` from ${filter.source}` : '';
      if (answer.matched === 0) {
        closeRetry();
        shell.notify(`No ${what}${where} to retry: each was retried already.`);
        return;
      }
      // The API retries at most its default limit per request, the oldest first.
      const taken = Math.min(answer.matched, BULK_RETRY_LIMIT);
      retryQuestion.textContent =
        taken < answer.matched
          ? `Retry the ${taken} oldest of ${answer.matched} ${what}${where}?`
          : `Retry ${answer.matched} ${what}${where}?`;
      confirmRetry.textContent = `Retry ${taken}`;
      asked = request;
      retryPanel.hidden = false;
      /** @type {HTMLButtonElement} */ (confirmRetry).focus();
    }),
  );
  cancelRetry.addEventListener('click', closeRetry);
  confirmRetry.addEventListener('click', () =>
    shell.act(confirmRetry, async () => {
      if (!asked) return;
      const answer = await call('POST', 'api/runs/retry', {}, { ...asked, limit: BULK_RETRY_LIMIT });
      closeRetry();
      for (const { runId, retryOf } of answer.retried) remember(runId, { ...originOf(retryOf), retryOf });
      const count = answer.retried.length;
      shell.notify(
        count === 0
          ? 'Nothing was retried: those runs were retried meanwhile.'
          : `Retried ${count} run${count === 1 ? '' : 's'}: the new run${count === 1 ? ' is' : 's are'} queued.`,
      );
      shell.refreshNow();
    }),
  );
  const pageLabel = h('span', { class: 'muted' });
  const list = h('div', { id: 'runs-list', 'aria-live': 'polite' });
  const standing = h('span', { id: 'runs-standing', class: 'muted', hidden: true });

  const restart = () => {
    filter.status = /** @type {HTMLSelectElement} */ (status).value;
    filter.source = /** @type {HTMLInputElement} */ (source).value.trim();
    filter.tokenId = /** @type {HTMLInputElement} */ (token).value.trim();
    filter.limit = Number(/** @type {HTMLSelectElement} */ (size).value);
    shell.replaceQuery('/runs', {
      status: filter.status,
      source: filter.source,
      tokenId: filter.tokenId,
      limit: filter.limit === 50 ? '' : String(filter.limit),
    });
    pages = [undefined];
    closeRetry();
    showRetryAction();
    shell.refreshNow();
  };
  status.addEventListener('change', restart);
  size.addEventListener('change', restart);
  source.addEventListener('change', restart);
  token.addEventListener('change', restart);
  older.addEventListener('click', () => {
    if (!next) return;
    pages.push(next);
    shell.refreshNow();
  });
  newer.addEventListener('click', () => {
    if (pages.length > 1) pages.pop();
    shell.refreshNow();
  });
  newest.addEventListener('click', () => {
    pages = [undefined];
    shell.refreshNow();
  });

  const element = h(
    'section',
    { class: 'view', 'aria-labelledby': 'runs-title' },
    h('div', { class: 'toolbar' }, h('h2', { id: 'runs-title' }, 'Runs'), standing),
    h(
      'div',
      { class: 'toolbar' },
      status,
      source,
      token,
      size,
      retryThese,
      h('span', { class: 'grow' }),
      pageLabel,
      newest,
      newer,
      older,
    ),
    retryPanel,
    list,
  );

  return {
    name: 'runs',
    element,
    async refresh() {
      const before = pages.at(-1);
      // The summary view: each run with the first line of its reply and error, never the texts
      // whole (a page of 200 long replies would be megabytes every poll); the run's page has them.
      const answer = await call('GET', 'api/runs', {
        status: filter.status,
        source: filter.source,
        tokenId: filter.tokenId,
        limit: filter.limit,
        before,
        view: 'summary',
      });
      // After the list, not beside it: a wrong token then counts once toward the lockout.
      // Queue depth is a bonus: without it (an older gateway, a proxy hiding /metrics) the list still shows.
      showStanding(standing, await workStanding().catch(() => undefined));
      next = answer.next ?? null;
      /** @type {HTMLButtonElement} */ (older).disabled = !next;
      /** @type {HTMLButtonElement} */ (newer).disabled = pages.length < 2;
      /** @type {HTMLButtonElement} */ (newest).disabled = pages.length < 2;
      pageLabel.textContent = pages.length > 1 ? `page ${pages.length}` : 'newest first';
      const key = JSON.stringify(answer.runs);
      if (key === shown) return;
      shown = key;
      for (const run of answer.runs) remember(run.runId, run);
      const filtered = filter.status !== '' || filter.source !== '' || filter.tokenId !== '';
      fill(list, runsTable(answer.runs, filtered));
    },
  };
}

/**
 * @param {any[]} runs
 * @param {boolean} filtered
 */
function runsTable(runs, filtered) {
  const hasCallbacks = runs.some((run) => run.callback && run.callback.status !== 'none');
  const headings = ['Status', 'Run', 'Hook', 'Token', 'Created', 'Took', 'Outcome', 'Delivery'];
  if (hasCallbacks) headings.push('Callback');
  const rows = runs.map((run) =>
    h(
      'tr',
      { 'data-run-id': run.runId, 'data-status': run.status },
      h('td', {}, badge(run.status)),
      h(
        'td',
        {},
        runLink(run.runId, true),
        run.retryOf
          ? h(
              'div',
              { class: 'muted small retry-of', title: `retry of ${run.retryOf}` },
              '↻ retry of ',
              runLink(run.retryOf, true),
            )
          : null,
      ),
      h('td', {}, run.source ?? '—', run.name ? h('span', { class: 'muted' }, ` · ${run.name}`) : null),
      h('td', { class: 'token' }, run.tokenId ?? h('span', { class: 'muted' }, '—')),
      h('td', {}, time(run.createdAt)),
      h('td', {}, run.finishedAt ? duration(run.startedAt, run.finishedAt) : '—'),
      h('td', { class: 'excerpt', title: run.errorExcerpt ?? run.replyExcerpt ?? '' }, outcome(run)),
      h(
        'td',
        {},
        badge(run.delivery?.status),
        run.delivery?.channel ? h('span', { class: 'muted' }, ` ${run.delivery.channel}`) : null,
      ),
      hasCallbacks ? h('td', {}, run.callback?.status !== 'none' ? badge(run.callback?.status) : '—') : null,
    ),
  );
  return table(
    headings,
    rows,
    filtered ? 'No run matches these filters.' : 'No runs yet. They appear here as hooks arrive.',
  );
}

/**
 * The first line of the run's error or reply, as the summary view gives it (at most 200
 * characters, "…" when cut; the row's tooltip shows it uncut by the table's width); for a
 * waiting run, the tool whose call waits for a decision.
 * @param {any} run
 */
function outcome(run) {
  if (run.status === 'waiting' && run.waitingFor) {
    return h('span', { class: 'waiting-for' }, 'waits for approval: ', h('code', {}, run.waitingFor.tool));
  }
  const text = run.errorExcerpt ?? run.replyExcerpt;
  if (!text) return h('span', { class: 'muted' }, '—');
  return h('span', { class: run.errorExcerpt ? 'bad' : '' }, String(text));
}

/**
 * @param {HTMLElement} element
 * @param {{ queued: number, running: number, deliveriesPending: number } | undefined} work
 */
function showStanding(element, work) {
  const known = work && [work.queued, work.running, work.deliveriesPending].every(Number.isFinite);
  element.hidden = !known;
  if (!work || !known) return;
  element.textContent = `now: ${work.queued} queued · ${work.running} running · ${work.deliveriesPending} ${work.deliveriesPending === 1 ? 'delivery' : 'deliveries'} pending`;
}
