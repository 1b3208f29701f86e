/**
 * `agentgate send wake|agent`: a test hook through the gateway's own ingress,
 * with the hook token from the config. Prints the JSON answer; exit 1 on an
 * error answer (the answer is still printed, for scripts).
 *
 * `--wait` (agent): the request asks for `waitForCompletion` (docs/callers.md), so
 * a gateway that supports it answers once the run has finished — no polling. When
 * the answer is a 202 instead (the run outlived `hooks.maxWaitSeconds`, or the
 * gateway predates `waitForCompletion` and ignored the field), the CLI follows the run itself:
 * `GET /api/runs/{id}` with the admin token, else `GET {hooks.path}/runs/{id}`
 * with the hook token, until it finishes or `--max-wait` passes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, type GatewayAnswer, GatewayClient } from '../admin-client.js';
import { CliError } from '../cli-error.js';
import { DEFAULT_MAX_WAIT_S } from '../defaults.js';
import { printJson, shortDuration } from '../format.js';
import { resolveTarget, type TargetOptions } from '../gateway-target.js';
import type { CliIo } from '../io.js';
import { startProgress } from '../progress.js';

export interface WakeOptions extends TargetOptions {
  mode?: string;
}

export interface AgentOptions extends TargetOptions {
  name?: string;
  agent?: string;
  sessionKey?: string;
  wakeMode?: string;
  channel?: string;
  to?: string;
  model?: string;
  thinking?: string;
  timeout?: number;
  idempotencyKey?: string;
  wait?: boolean;
  maxWait?: number;
}

const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);
/** The gateway's default `hooks.maxWaitSeconds` (docs/callers.md, "Waiting in the answer"). */
const DEFAULT_SERVER_MAX_WAIT_S = 120;

export async function sendWakeCommand(io: CliIo, text: string, options: WakeOptions): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const body: Record<string, unknown> = { text };
  if (options.mode) body.mode = options.mode;
  const answer = await client.request({
    method: 'POST',
    path: `${client.hooksPath}/wake`,
    auth: 'hook',
    json: body,
  });
  finish(io, answer, 'POST wake');
}

export async function sendAgentCommand(io: CliIo, message: string, options: AgentOptions): Promise<void> {
  const target = resolveTarget(options, io.env);
  const client = GatewayClient.of(target);
  const body: Record<string, unknown> = { message };
  if (options.name) body.name = options.name;
  if (options.agent) body.agentId = options.agent;
  if (options.sessionKey) body.sessionKey = options.sessionKey;
  if (options.wakeMode) body.wakeMode = options.wakeMode;
  if (options.channel || options.to) {
    body.deliver = true;
    body.channel = options.channel ?? 'last';
    if (options.to) body.to = options.to;
  }
  if (options.model) body.model = options.model;
  if (options.thinking) body.thinking = options.thinking;
  if (options.timeout !== undefined) body.timeoutSeconds = options.timeout;
  if (options.wait) body.waitForCompletion = true;
  const headers = options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : undefined;

  const started = Date.now();
  const progress = options.wait ? startProgress('waiting for the run to finish…', io.stderr) : undefined;
  try {
    const serverMaxWait =
      (target.config.hooks as { maxWaitSeconds?: number }).maxWaitSeconds ?? DEFAULT_SERVER_MAX_WAIT_S;
    const answer = await client.request({
      method: 'POST',
      path: `${client.hooksPath}/agent`,
      auth: 'hook',
      json: body,
      headers,
      // The gateway may hold the answer up to hooks.maxWaitSeconds: never give up before it does,
      // or the run id of an accepted run would be lost.
      timeoutMs: options.wait ? (serverMaxWait + 30) * 1000 : undefined,
    });
    const runId = answer.json?.runId;
    const settled = answer.status === 200 && typeof answer.json?.status === 'string';
    if (!options.wait || answer.status >= 300 || settled || typeof runId !== 'string') {
      progress?.stop();
      finish(io, answer, 'POST agent', options.wait);
      return;
    }
    const run = await follow(client, runId, started, (options.maxWait ?? DEFAULT_MAX_WAIT_S) * 1000, (line) =>
      progress?.update(line),
    );
    progress?.stop();
    const result = {
      ok: true,
      runId,
      status: run.status,
      reply: run.reply ?? null,
      error: run.error ?? null,
      delivery: run.delivery ?? null,
    };
    printJson(io, result);
    if (!FINISHED.has(String(run.status))) {
      throw new CliError(
        `run ${runId} is still ${run.status} after --max-wait; follow it: agentgate runs show ${runId}`,
      );
    }
    if (run.status !== 'succeeded') throw new CliError(`run ${runId} ${run.status}`);
  } finally {
    progress?.stop();
  }
}

/** Polls the run until it finishes or `maxWaitMs` passes; returns its last view. */
async function follow(
  client: GatewayClient,
  runId: string,
  started: number,
  maxWaitMs: number,
  report: (line: string) => void,
): Promise<Record<string, unknown>> {
  const path = client.hasAdminToken
    ? `/api/runs/${encodeURIComponent(runId)}`
    : `${client.hooksPath}/runs/${encodeURIComponent(runId)}`;
  let pause = 250;
  for (;;) {
    const run = await client.expectOk({ path, auth: client.hasAdminToken ? 'admin' : 'hook' });
    const elapsed = Date.now() - started;
    report(`waiting for run ${runId}: ${String(run.status)} (${shortDuration(elapsed)})`);
    if (FINISHED.has(String(run.status)) || elapsed >= maxWaitMs) return run;
    await sleep(pause);
    pause = Math.min(pause * 2, 2000);
  }
}

/**
 * Prints the answer; an error answer also names itself on stderr and exits 1.
 * With `--wait`, a finished run that did not succeed exits 1 too.
 */
function finish(io: CliIo, answer: GatewayAnswer, what: string, waited = false): void {
  if (answer.json) printJson(io, answer.json);
  else if (answer.raw) io.stdout.write(`${answer.raw}\n`);
  if (answer.status >= 300) throw new CliError(describeError(answer, what));
  const status = answer.json?.status;
  if (waited && typeof status === 'string' && FINISHED.has(status) && status !== 'succeeded') {
    throw new CliError(`run ${String(answer.json?.runId)} ${status}`);
  }
}
