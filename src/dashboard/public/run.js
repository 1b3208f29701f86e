// @ts-check
/**
 * One run: what came in, its steps, what the agent answered, where it went, and Retry /
 * Redeliver; for a waiting run, the tool call it waits for with Approve / Deny.
 */
import { call, fetchBlob, seg } from './api.js';
import { badge, duration, facts, fill, h, runLink, textBlock, time } from './dom.js';
import { originOf, remember } from './runs.js';
import { decide, readSteps, stepsTable, waitingPanel } from './steps.js';

const FINISHED = ['succeeded', 'failed', 'timed_out'];
/** Shown inline as thumbnails; every other file is a download link. */
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/**
 * @param {import('./app.js').Shell} shell
 * @param {string} runId
 * @returns {import('./app.js').View}
 */
export function runView(shell, runId) {
  const retry = h('button', { type: 'button', id: 'retry', class: 'primary', disabled: true }, 'Retry');
  const redeliver = h('button', { type: 'button', id: 'redeliver', disabled: true }, 'Redeliver');
  const approve = h('button', { type: 'button', id: 'approve', class: 'primary' }, 'Approve');
  const deny = h('button', { type: 'button', id: 'deny', class: 'danger' }, 'Deny');
  const heading = h('h2', { id: 'run-title' }, 'Run ', h('span', { class: 'id' }, runId));
  const body = h('div', { id: 'run-detail' }, h('p', { class: 'muted' }, 'Loading…'));
  let shown = '';
  /** The run's outbox item as last read, and the delivery status it was read for. */
  /** @type {any} */
  let record;
  let recordFor = '';
  /** The run's steps as last read, and the step count they were read for. */
  /** @type {any[] | undefined} */
  let steps;
  let stepsFor = 0;
  /** Blob URLs of this run's files, by index: each fetched once per visit of the page. */
  /** @type {Map<number, Promise<string>>} */
  const blobs = new Map();
  /** @param {number} index */
  const blobUrl = (index) => {
    let url = blobs.get(index);
    if (!url) {
      url = fetchBlob(`api/runs/${seg(runId)}/attachments/${index}`).then((blob) =>
        URL.createObjectURL(blob),
      );
      // A failed fetch is tried again next time.
      url.catch(() => blobs.delete(index));
      blobs.set(index, url);
    }
    return url;
  };

  retry.addEventListener('click', () =>
    shell.act(retry, async () => {
      const answer = await call('POST', `api/runs/${seg(runId)}/retry`);
      remember(answer.runId, { ...originOf(runId), retryOf: runId });
      shell.notify(['Retried: the new run is ', runLink(answer.runId), '.']);
      shell.navigate(`/runs/${encodeURIComponent(answer.runId)}`);
    }),
  );
  /**
   * @param {HTMLElement} button
   * @param {'approve' | 'deny'} decision
   */
  const decideWith = (button, decision) =>
    shell.act(button, async () => {
      // Both buttons stay off until the answer: one decision applies.
      const other = /** @type {HTMLButtonElement} */ (button === approve ? deny : approve);
      other.disabled = true;
      try {
        await decide(runId, decision);
      } finally {
        other.disabled = false;
      }
      shell.notify(
        decision === 'approve'
          ? ['Approved: ', runLink(runId), ' is queued again and makes the call.']
          : ['Denied: ', runLink(runId), ' is queued again; the model is told the call was denied.'],
      );
    });
  approve.addEventListener('click', () => decideWith(approve, 'approve'));
  deny.addEventListener('click', () => decideWith(deny, 'deny'));
  redeliver.addEventListener('click', () =>
    shell.act(redeliver, async () => {
      await call('POST', `api/runs/${seg(runId)}/redeliver`);
      shell.notify(['Redelivery of ', runLink(runId), ' queued.']);
      shell.refreshNow();
    }),
  );

  const element = h(
    'section',
    { class: 'view', 'aria-labelledby': 'run-title' },
    h('p', {}, h('a', { href: '#/runs' }, '← All runs')),
    h('div', { class: 'toolbar' }, heading, h('span', { class: 'grow' }), retry, redeliver),
    body,
  );

  return {
    name: 'run',
    element,
    async refresh() {
      /** @type {any} */
      let run;
      try {
        run = await call('GET', `api/runs/${seg(runId)}`);
      } catch (error) {
        // The banner says why; nothing here pretends to be still loading.
        if (shown === '') fill(body);
        throw error;
      }
      const finished = FINISHED.includes(run.status);
      /** @type {HTMLButtonElement} */ (retry).disabled = !finished;
      retry.title = finished ? 'Queue a new run with the same inputs' : 'The run has not finished yet';
      /** @type {HTMLButtonElement} */ (redeliver).disabled = !finished || run.delivery?.status === 'none';
      redeliver.title =
        run.delivery?.status === 'none'
          ? 'This run was not to be delivered'
          : 'Send its reply again, same route';
      // The outbox list is read again only while the delivery moves (pending) or when its status changed.
      const deliveryStatus = finished ? run.delivery?.status : 'none';
      if (['none', 'skipped'].includes(deliveryStatus)) record = undefined;
      else if (deliveryStatus === 'pending' || deliveryStatus !== recordFor)
        record = await deliveryRecord(runId);
      recordFor = deliveryStatus;
      // Steps are only ever added: read again when the count moved (an older gateway has none).
      const count = typeof run.steps === 'number' ? run.steps : 0;
      if (count === 0) steps = undefined;
      else if (count !== stepsFor) steps = await readSteps(runId);
      stepsFor = count;
      const key = JSON.stringify([run, record, steps]);
      if (key === shown) return;
      shown = key;
      const waiting =
        run.status === 'waiting' && run.waitingFor ? waitingPanel(run.waitingFor, approve, deny) : null;
      fill(
        body,
        waiting,
        details({ ...originOf(runId), ...run }, record, steps, (files) => attachmentList(files, blobUrl)),
      );
    },
  };
}

/**
 * The run's newest outbox item (attempts, last error): its own, asked by run id, so the poll
 * reads one row rather than the newest deliveries of every run.
 * @param {string} runId
 */
async function deliveryRecord(runId) {
  const answer = await call('GET', 'api/deliveries', { runId, limit: 1 });
  return (answer.deliveries ?? [])[0];
}

/**
 * The run's files: images as thumbnails, the others as download links, all from blob:
 * URLs of files fetched with the token header (api.js, fetchBlob).
 * @param {{ name: string, mediaType: string, bytes: number }[]} files
 * @param {(index: number) => Promise<string>} blobUrl
 */
function attachmentList(files, blobUrl) {
  return h(
    'ul',
    { class: 'attachments', id: 'attachments' },
    files.map((file, index) => {
      const label = `${file.name} (${file.mediaType}, ${file.bytes} bytes)`;
      if (IMAGE_TYPES.includes(file.mediaType)) {
        const img = h('img', { class: 'thumbnail', alt: file.name, title: label, 'data-index': index });
        blobUrl(index).then(
          (url) => img.setAttribute('src', url),
          () => img.setAttribute('alt', `${file.name} (could not be loaded)`),
        );
        return h('li', {}, img, h('span', { class: 'attachment-name' }, label));
      }
      const link = h('a', { href: '#', class: 'download', 'data-index': index }, label);
      link.addEventListener('click', (event) => {
        event.preventDefault();
        blobUrl(index).then((url) => {
          const save = h('a', { href: url, download: file.name });
          save.click();
        });
      });
      return h('li', {}, link);
    }),
  );
}

/**
 * @param {any} run
 * @param {any} record the delivery record, if any
 * @param {any[] | undefined} steps its steps, when it has any
 * @param {(files: any[]) => Node} showFiles
 */
function details(run, record, steps, showFiles) {
  const delivery = run.delivery ?? {};
  const attempts = delivery.attempts ?? record?.attempts;
  return [
    facts([
      ['Status', badge(run.status)],
      ['Hook', run.source ?? undefined],
      ['Token', run.tokenId ?? undefined],
      ['Name', run.name ?? undefined],
      ['Agent', run.agentId],
      ['Session', h('code', {}, run.sessionKey)],
      ['Model', run.model ?? 'agent default'],
      ['Created', time(run.createdAt)],
      ['Started', time(run.startedAt)],
      ['Finished', time(run.finishedAt)],
      ['Took', run.finishedAt ? duration(run.startedAt, run.finishedAt) : undefined],
      ['Retry of', run.retryOf ? runLink(run.retryOf) : undefined],
      ['Steps', run.steps ? run.steps : undefined],
    ]),
    h('h3', {}, 'Message as received'),
    'message' in run
      ? textBlock(run.message, 'message')
      : h('p', { class: 'muted' }, 'This gateway does not report the message in its run view.'),
    Array.isArray(run.attachments) && run.attachments.length > 0
      ? [h('h3', {}, 'Attachments'), showFiles(run.attachments)]
      : null,
    // What the run did on the way to its reply.
    steps ? [h('h3', {}, 'Steps'), stepsTable(steps)] : null,
    h('h3', {}, 'Reply'),
    textBlock(run.reply, 'reply'),
    h('h3', {}, 'Error'),
    textBlock(run.error, 'error'),
    h('h3', {}, 'Delivery'),
    facts([
      ['Status', badge(delivery.status)],
      ['Channel', delivery.channel ?? '—'],
      ['To', delivery.to ?? '—'],
      ['Attempts', attempts ?? '—'],
      ['Reason', delivery.reason ?? undefined],
      ['Last error', record?.lastError ?? undefined],
      ['Updated', record ? time(record.updatedAt) : undefined],
    ]),
    run.callback
      ? [
          h('h3', {}, 'Callback'),
          run.callback.status === 'none'
            ? h('p', { class: 'muted' }, 'No callback URL for this run.')
            : facts([
                ['Status', badge(run.callback.status)],
                ['Attempts', run.callback.attempts ?? 0],
              ]),
        ]
      : null,
  ];
}
