// @ts-check
/**
 * A run's steps and the tool call it waits for, on its page (docs/operating.md, "A run's steps"
 * and "Approving tool calls"). Arguments come from the model and results from tool servers:
 * both are untrusted, and go in as text only (dom.js), pretty-printed JSON and plain text.
 */
import { ApiError, call, seg } from './api.js';
import { badge, duration, h, table } from './dom.js';

/**
 * The run's committed steps (`GET /api/runs/{id}/steps`).
 * @param {string} runId
 * @returns {Promise<any[]>}
 */
export async function readSteps(runId) {
  const answer = await call('GET', `api/runs/${seg(runId)}/steps`);
  return Array.isArray(answer?.steps) ? answer.steps : [];
}

/**
 * Takes the operator's decision on the call the run waits for. One decision applies, across
 * replicas and the approval timeout: any other is 409 `not_waiting`, shown with what it means.
 * @param {string} runId
 * @param {'approve' | 'deny'} decision
 */
export async function decide(runId, decision) {
  try {
    await call('POST', `api/runs/${seg(runId)}/approval`, {}, { decision });
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'not_waiting') throw error;
    throw new ApiError(
      error.status,
      error.code,
      `Nothing was ${decision === 'approve' ? 'approved' : 'denied'}: ${error.message}. ` +
        'Another operator, or the approval timeout (tools.approvalTimeout), decided it first; the page shows the run as it is now.',
    );
  }
}

/** @param {unknown} value */
const json = (value) => JSON.stringify(value, null, 2);

/**
 * The call a waiting run waits for, with the buttons that decide it.
 * @param {{ step: number, tool: string, arguments: Record<string, unknown> }} waiting
 * @param {HTMLElement} approve
 * @param {HTMLElement} deny
 */
export function waitingPanel(waiting, approve, deny) {
  return h(
    'section',
    { id: 'run-waiting', class: 'waiting', 'aria-labelledby': 'run-waiting-title' },
    h('h3', { id: 'run-waiting-title' }, 'Waiting for approval'),
    h(
      'p',
      {},
      'The agent asks to call ',
      h('code', { id: 'waiting-tool' }, waiting.tool),
      ` (step ${waiting.step}) with these arguments:`,
    ),
    h('pre', { class: 'text arguments', id: 'waiting-arguments' }, json(waiting.arguments)),
    h(
      'div',
      { class: 'toolbar' },
      approve,
      deny,
      h(
        'span',
        { class: 'muted' },
        'Approve: the run makes the call. Deny: the model is told it was denied.',
      ),
    ),
  );
}

/**
 * The steps, in order: model calls (their text, if any) and tool calls (arguments and result).
 * @param {any[]} steps
 */
export function stepsTable(steps) {
  const rows = steps.map((step) =>
    h(
      'tr',
      { 'data-index': step.index, 'data-kind': step.kind, 'data-status': step.status },
      h('td', { class: 'num' }, step.index),
      h('td', {}, step.kind),
      h('td', {}, step.tool ? h('code', {}, step.tool) : h('span', { class: 'muted' }, '—')),
      h('td', {}, badge(step.status)),
      h('td', {}, duration(step.startedAt, step.finishedAt)),
      h(
        'td',
        { class: 'step-arguments' },
        step.arguments === undefined
          ? h('span', { class: 'muted' }, '—')
          : h('pre', { class: 'text arguments' }, json(step.arguments)),
      ),
      h(
        'td',
        { class: 'step-result wide' },
        step.result ? h('pre', { class: 'text result' }, step.result) : h('span', { class: 'muted' }, '—'),
      ),
    ),
  );
  return h(
    'div',
    { id: 'run-steps' },
    table(['Step', 'Kind', 'Tool', 'Status', 'Took', 'Arguments', 'Result'], rows, 'No steps yet.'),
  );
}
