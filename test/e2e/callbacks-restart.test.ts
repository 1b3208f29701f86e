/**
 * A completion callback survives the gateway being killed (docs/callers.md,
 * "Retries"): through the real CLI, a callback whose first attempt got a 503 is
 * pending when the gateway is SIGKILLed; after a restart the retry arrives with
 * the same webhook-id and a valid Standard Webhooks signature, and RunView
 * counts both attempts.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { afterEach, expect, it } from 'vitest';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { ADMIN_TOKEN, HOOK_TOKEN, readAnswer, tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let running: RunningCli[] = [];
let receiver: CallbackReceiver | undefined;
let dir = '';

afterEach(async () => {
  for (const cli of running) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  }
  running = [];
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('a callback pending when the gateway is killed arrives after the restart, with the same webhook-id', async () => {
  receiver = await startCallbackReceiver();
  dir = tempDir('agentgate-callback-restart-');
  const file = writeConfig(dir, { hooks: { callbacks: { secret: SECRET, allowedOrigins: [receiver.url] } } });
  const start = async () => {
    const cli = await startCli(['--config', file, '--port', '0'], {
      AGENTGATE_CONFIG: '',
      AGENTGATE_HOME: '',
    });
    running.push(cli);
    return cli;
  };
  const runView = async (url: string, runId: string) =>
    (
      await fetch(`${url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(
        readAnswer,
      )
    ).body;

  receiver.answerNext({ status: 503 });
  const first = await start();
  const accepted = await fetch(`${first.url}/hooks/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'deploy finished', deliver: false, callbackUrl: `${receiver.url}/cb` }),
  }).then(readAnswer);
  expect(accepted.status, accepted.text).toBe(202);
  const runId = accepted.body.runId as string;
  await waitFor(
    async () => (await runView(first.url, runId)).callback.attempts === 1,
    'the first attempt (503) recorded',
  );
  expect((await runView(first.url, runId)).callback).toEqual({ status: 'pending', attempts: 1 });
  await first.kill('SIGKILL');

  const second = await start();
  await waitFor(() => receiver?.received.length === 2, 'the retry after the restart', 30_000);
  const [before, after] = receiver.received;
  expect(after?.headers['webhook-id']).toBe(before?.headers['webhook-id']);
  expect(after?.json).toMatchObject({ type: 'run.finished', runId, status: 'succeeded' });
  expect(() =>
    new Webhook(SECRET).verify(after?.raw as string, after?.headers as unknown as Record<string, string>),
  ).not.toThrow();
  await waitFor(
    async () => (await runView(second.url, runId)).callback.status === 'delivered',
    'the callback recorded as delivered',
  );
  expect((await runView(second.url, runId)).callback).toEqual({ status: 'delivered', attempts: 2 });
}, 60_000);
