/**
 * `agentgate runs list|show|retry|redeliver` over the admin API (docs/operating.md, "Command line").
 * People get a table or aligned fields; `--json` prints the API's answer as is. (`runs steps`,
 * `approve` and `deny`: run-steps.ts.)
 */
import { HOOK_TOKEN_ID } from '../../config/schema.js';
import { GatewayClient } from '../admin-client.js';
import { CliError } from '../cli-error.js';
import { between, fields, oneLine, printJson, relativeTime, table, visible } from '../format.js';
import { type GatewayTarget, resolveTarget, type TargetOptions } from '../gateway-target.js';
import type { CliIo } from '../io.js';

export interface ListOptions extends TargetOptions {
  status?: string;
  source?: string;
  /** A hook token's id (docs/senders.md), sent as `tokenId`. */
  token?: string;
  limit?: number;
  before?: string;
  json?: boolean;
}

/**
 * A RunView (docs/operating.md, "Admin API") as the CLI reads it: every field optional, as
 * older gateways lack some.
 */
export interface RunView {
  runId: string;
  status: string;
  agentId?: string;
  sessionKey?: string;
  model?: string | null;
  createdAt?: string;
  startedAt?: string | null;
  finishedAt?: string | null;
  /** A queued run held back until then (a provider's rate limit); null otherwise. */
  notBefore?: string | null;
  reply?: string | null;
  error?: string | null;
  source?: string;
  name?: string | null;
  retryOf?: string | null;
  /** The message as received (GET /api/runs/{id} only). */
  message?: string;
  /** The hook token that accepted it; null when none did (a retry). */
  tokenId?: string | null;
  delivery?: { status: string; channel: string | null; to: string | null; reason: string | null };
  callback?: { status: string; attempts: number };
  /** How many steps its loop committed (`runs steps` lists them). */
  steps?: number;
  /** The tool call a `waiting` run waits on; null otherwise. */
  waitingFor?: WaitingFor | null;
}

/** The tool call a waiting run waits on (docs/operating.md, "Approving tool calls"). */
export interface WaitingFor {
  step: number;
  tool: string;
  arguments: Record<string, unknown>;
}

export async function runsListCommand(io: CliIo, options: ListOptions): Promise<void> {
  const target = resolveTarget(options, io.env);
  if (options.token !== undefined) checkTokenId(options.token, target);
  const client = GatewayClient.of(target);
  const query = new URLSearchParams();
  if (options.status) query.set('status', options.status);
  if (options.source) query.set('source', options.source);
  if (options.token !== undefined) query.set('tokenId', options.token);
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.before) query.set('before', options.before);
  // The table shows no reply: it asks for the summaries (docs/operating.md, "The run list's
  // summary view"); `--json` prints the list itself, replies whole. An older gateway ignores it.
  if (!options.json) query.set('view', 'summary');
  const path = `/api/runs${query.size > 0 ? `?${query}` : ''}`;
  const answer = await client.expectOk({ path, auth: 'admin' });
  if (options.json) return printJson(io, answer);

  const runs = Array.isArray(answer.runs) ? (answer.runs as RunView[]) : [];
  if (runs.length === 0) {
    const none = options.status ? `no ${options.status} runs` : 'no runs';
    io.console.log(options.token !== undefined ? `${none} with token ${options.token}` : none);
    return;
  }
  const now = Date.now();
  io.console.log(
    table(
      ['RUN', 'STATUS', 'SOURCE', 'TOKEN', 'NAME', 'CREATED', 'TOOK', 'DELIVERY'],
      runs.map((run) => [
        run.runId,
        run.status === 'waiting' && run.waitingFor
          ? `waiting (${oneLine(run.waitingFor.tool, 40)})`
          : run.status,
        run.source ?? '-',
        run.tokenId ?? '-',
        oneLine(run.name, 24),
        relativeTime(run.createdAt, now),
        between(run.startedAt, run.finishedAt),
        deliverySummary(run),
      ]),
    ),
  );
  if (typeof answer.next === 'string') {
    const again = [
      'agentgate runs list',
      options.status ? `--status ${options.status}` : '',
      options.source ? `--source ${options.source}` : '',
      options.token !== undefined ? `--token ${options.token}` : '',
      options.limit !== undefined ? `--limit ${options.limit}` : '',
      `--before ${answer.next}`,
    ];
    io.console.error(`more: ${again.filter(Boolean).join(' ')}`);
  }
}

/**
 * `--token` takes a hook token's id (docs/senders.md), which goes into the request's URL: the
 * token itself would end up in proxies' access logs, so a value that is one of the config's
 * tokens is refused here, without being printed.
 */
function checkTokenId(value: string, { config }: GatewayTarget): void {
  const secrets = [config.gateway.auth.token, ...config.hooks.tokens.map((t) => t.token)];
  if (secrets.includes(value)) {
    throw new CliError(
      '--token takes the id of a hook token (hooks.tokens[].id, or "default" for hooks.token), not the token itself',
    );
  }
  if (!HOOK_TOKEN_ID.test(value)) {
    throw new CliError(
      `--token: "${value}" is not a hook token id (1-64 lowercase letters, digits, "-" or "_")`,
    );
  }
}

export async function runsShowCommand(
  io: CliIo,
  runId: string,
  options: TargetOptions & { json?: boolean },
): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const run = (await client.expectOk({
    path: `/api/runs/${encodeURIComponent(runId)}`,
    auth: 'admin',
  })) as unknown as RunView;
  if (options.json) return printJson(io, run);
  io.console.log(describeRun(run));
  if (run.status === 'waiting' && run.waitingFor) io.console.error(decideHint(runId));
}

export interface RetryOptions extends TargetOptions {
  json?: boolean;
  failed?: boolean;
  timedOut?: boolean;
  source?: string;
  since?: string;
  until?: string;
  limit?: number;
  dryRun?: boolean;
}

export async function runsRetryCommand(
  io: CliIo,
  runId: string | undefined,
  options: RetryOptions,
): Promise<void> {
  const bulk = options.failed || options.timedOut;
  const bulkOnly = (['source', 'since', 'until', 'limit', 'dryRun'] as const).filter(
    (name) => options[name] !== undefined,
  );
  if (runId !== undefined && bulk) {
    throw new CliError('give a run id or --failed/--timed-out, not both');
  }
  if (runId === undefined) {
    if (!bulk) throw new CliError('give the run id to retry, or --failed and/or --timed-out to retry many');
    return runsBulkRetry(io, options);
  }
  if (bulkOnly.length > 0) {
    const flag = (bulkOnly[0] as string).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new CliError(`--${flag} goes with --failed or --timed-out, not with a run id`);
  }
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const answer = await client.expectOk({
    method: 'POST',
    path: `/api/runs/${encodeURIComponent(runId)}/retry`,
    auth: 'admin',
    json: {},
  });
  if (options.json) return printJson(io, answer);
  if (typeof answer.runId !== 'string') throw new CliError('the gateway answered without a runId');
  io.console.log(`run ${runId} retried as ${answer.runId}`);
  io.console.error(`follow it: agentgate runs show ${answer.runId}`);
}

const DURATION = /^(\d+)(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `--since`/`--until`: a duration back from `now` (`90s`, `30m`, `1h`, `2d`, `1w`) or an ISO 8601
 * date or time (without a zone: local time); sent as an ISO 8601 time in UTC.
 */
export function pointInTime(flag: string, value: string, now: number): string {
  const duration = DURATION.exec(value);
  if (duration)
    return new Date(now - Number(duration[1]) * (UNIT_MS[duration[2] as string] as number)).toISOString();
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) {
    throw new CliError(`${flag}: "${value}" is neither a duration (30m, 1h, 2d) nor an ISO 8601 time`);
  }
  return new Date(at).toISOString();
}

interface BulkAnswer {
  ok: true;
  matched: number;
  retried: { runId: string; retryOf: string }[];
}

/**
 * `runs retry --failed [--timed-out]`: `POST /api/runs/retry` once per status (docs/cli.md);
 * with both, the two answers are added up into one of the same shape.
 */
async function runsBulkRetry(io: CliIo, options: RetryOptions): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const now = Date.now();
  const statuses = [options.failed ? 'failed' : undefined, options.timedOut ? 'timed_out' : undefined].filter(
    (status): status is string => status !== undefined,
  );
  const filter: Record<string, unknown> = {};
  if (options.source !== undefined) filter.source = options.source;
  if (options.since !== undefined) filter.since = pointInTime('--since', options.since, now);
  if (options.until !== undefined) filter.until = pointInTime('--until', options.until, now);
  if (options.limit !== undefined) filter.limit = options.limit;
  if (options.dryRun) filter.dryRun = true;
  const total: BulkAnswer = { ok: true, matched: 0, retried: [] };
  for (const status of statuses) {
    const answer = await client.expectOk({
      method: 'POST',
      path: '/api/runs/retry',
      auth: 'admin',
      json: { status, ...filter },
    });
    if (typeof answer.matched !== 'number' || !Array.isArray(answer.retried)) {
      throw new CliError('the gateway answered without matched and retried');
    }
    total.matched += answer.matched;
    total.retried.push(...(answer.retried as BulkAnswer['retried']));
  }
  if (options.json) return printJson(io, total);

  const what = `${statuses.map((status) => status.replace('_', '-')).join(' or ')} run${total.matched === 1 ? '' : 's'}`;
  if (options.dryRun) {
    io.console.log(`${total.matched} ${what} to retry`);
    return;
  }
  io.console.log(`${total.matched} ${what} matched, ${total.retried.length} retried`);
  if (total.retried.length > 0) {
    io.console.log(
      table(
        ['NEW RUN', 'RETRY OF'],
        total.retried.map((r) => [r.runId, r.retryOf]),
      ),
    );
  }
  if (total.matched > total.retried.length) {
    io.console.error(
      `${total.matched - total.retried.length} more match: run the command again, or raise --limit`,
    );
  }
}

export async function runsRedeliverCommand(
  io: CliIo,
  runId: string,
  options: TargetOptions & { json?: boolean },
): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const answer = await client.expectOk({
    method: 'POST',
    path: `/api/runs/${encodeURIComponent(runId)}/redeliver`,
    auth: 'admin',
    json: {},
  });
  if (options.json) return printJson(io, answer);
  io.console.log(`the reply of run ${runId} is queued for delivery again`);
}

/** A run for people: aligned fields, then the error and the reply in full. */
export function describeRun(run: RunView, now = Date.now()): string {
  const when = (iso: string | null | undefined) => (iso ? `${iso} (${relativeTime(iso, now)})` : '-');
  const entries: [string, string][] = [
    ['run', run.runId],
    ['status', run.status],
  ];
  if (run.source !== undefined) entries.push(['source', run.source]);
  if (run.tokenId !== undefined) entries.push(['token', run.tokenId ?? '-']);
  if (run.name) entries.push(['name', run.name]);
  entries.push(
    ['agent', run.agentId ?? '-'],
    ['session', run.sessionKey ?? '-'],
    ['model', run.model ?? '-'],
    ['created', when(run.createdAt)],
    ['started', when(run.startedAt)],
    ['finished', when(run.finishedAt)],
    ['took', between(run.startedAt, run.finishedAt)],
  );
  if (run.notBefore) entries.push(['not before', when(run.notBefore)]);
  if (run.retryOf) entries.push(['retry of', run.retryOf]);
  entries.push(['delivery', deliverySummary(run, true)]);
  if (run.callback && run.callback.status !== 'none') {
    const { status, attempts } = run.callback;
    entries.push(['callback', `${status} (${attempts} attempt${attempts === 1 ? '' : 's'})`]);
  }
  if (run.steps) entries.push(['steps', `${run.steps} (agentgate runs steps ${run.runId})`]);
  if (run.waitingFor) entries.push(['waiting for', waitingLine(run.waitingFor)]);
  let text = fields(entries);
  if (run.waitingFor) {
    // Pretty-printed, control characters written out line by line: the model wrote them.
    const json = JSON.stringify(run.waitingFor.arguments, null, 2);
    text += `\n\narguments:\n${indent(json.split('\n').map(visible).join('\n'))}`;
  }
  if (run.message) text += `\n\nmessage:\n${indent(run.message)}`;
  if (run.error) text += `\n\nerror:\n${indent(run.error)}`;
  if (run.reply) text += `\n\nreply:\n${indent(run.reply)}`;
  return text;
}

function deliverySummary(run: RunView, long = false): string {
  const d = run.delivery;
  if (!d) return '-';
  if (d.status === 'none') return 'none';
  const route = d.channel ? ` ${d.channel}${d.to ? `:${d.to}` : ''}` : '';
  const reason = long && d.reason ? ` — ${d.reason}` : '';
  return `${d.status}${route}${reason}`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/** `tickets.create_ticket (step 3)`: the call a waiting run waits on, its arguments aside. */
export function waitingLine(waiting: WaitingFor): string {
  return `${oneLine(waiting.tool, 80)} (step ${waiting.step})`;
}

/** Printed on stderr under a waiting run: the two commands that decide. */
export function decideHint(runId: string): string {
  return `decide: agentgate runs approve ${runId}  (or: agentgate runs deny ${runId})`;
}
