/**
 * "Accepted means durable" (docs/durability.md) through the real CLI: every
 * 200/202 answered before a SIGKILL is in the store after a restart;
 * idempotency keys survive a restart too. Also: a port already in use stops
 * `run` with a clear message.
 */

import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningCli, runCli, startCli } from '../helpers/cli.js';
import {
  ADMIN_TOKEN,
  type Answer,
  HOOK_TOKEN,
  readAnswer,
  tempDir,
  writeConfig,
} from '../helpers/gateway.js';

const MAIN_EVENTS = '/api/sessions/agent:main:main/events';

let dir: string;
let file: string;
let running: RunningCli[];
let servers: Server[];

beforeEach(() => {
  dir = tempDir('agentgate-durability-');
  file = writeConfig(dir);
  running = [];
  servers = [];
});

afterEach(async () => {
  for (const cli of running) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  }
  for (const server of servers) await new Promise((done) => server.close(done));
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<RunningCli> {
  const cli = await startCli(['--config', file, '--port', '0'], { AGENTGATE_CONFIG: '', AGENTGATE_HOME: '' });
  running.push(cli);
  return cli;
}

function hook(
  url: string,
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return fetch(`${url}/hooks/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  }).then(readAnswer);
}

function admin(url: string, path: string): Promise<Answer> {
  return fetch(`${url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(readAnswer);
}

interface Sent {
  kind: 'wake' | 'agent';
  text: string;
  id: string;
}

async function send(url: string, i: number): Promise<Sent> {
  if (i % 2 === 0) {
    const text = `wake number ${i}`;
    const answer = await hook(url, 'wake', { text, mode: 'next-heartbeat' });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.eventOutcome).toBe('queued');
    return { kind: 'wake', text, id: answer.body.eventId };
  }
  const text = `agent message ${i}`;
  const answer = await hook(url, 'agent', {
    message: text,
    name: `n${i}`,
    deliver: false,
    wakeMode: 'next-heartbeat',
  });
  expect(answer.status, answer.text).toBe(202);
  return { kind: 'agent', text, id: answer.body.runId };
}

describe('accepted means durable', () => {
  it('all N accepted requests survive a SIGKILL right after the last answer', async () => {
    const N = 200;
    const CONCURRENCY = 8;
    const first = await start();

    const sent: Sent[] = [];
    let next = 0;
    // All but the last, several in flight at a time.
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < N - 1) {
          const i = next++;
          sent.push(await send(first.url, i));
        }
      }),
    );
    // The last one alone, and the kill as soon as its answer is in.
    sent.push(await send(first.url, N - 1));
    const killed = await first.kill('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');

    expect(sent).toHaveLength(N);
    expect(new Set(sent.map((s) => s.id)).size).toBe(N);

    const second = await start();
    const listed = await admin(second.url, `${MAIN_EVENTS}?limit=10000`);
    expect(listed.status).toBe(200);
    const events = new Map<string, { text: string; source: string }>(
      listed.body.events.map((e: { id: string; text: string; source: string }) => [e.id, e]),
    );
    const wakes = sent.filter((s) => s.kind === 'wake');
    expect(wakes).toHaveLength(N / 2);
    const missingEvents = wakes.filter((w) => events.get(w.id)?.text !== w.text);
    expect(missingEvents).toEqual([]);

    const runs = sent.filter((s) => s.kind === 'agent');
    const answers = await Promise.all(runs.map((r) => admin(second.url, `/api/runs/${r.id}`)));
    const missingRuns = runs.filter(
      (r, index) => answers[index]?.status !== 200 || answers[index]?.body.runId !== r.id,
    );
    expect(missingRuns).toEqual([]);
    for (const answer of answers) {
      expect(answer.body).toMatchObject({ agentId: 'main', delivery: { status: 'none' } });
      expect(['queued', 'running', 'succeeded', 'failed', 'timed_out']).toContain(answer.body.status);
    }
    expect((await second.kill('SIGTERM')).code).toBe(0);
  });

  it('work accepted before a SIGTERM is there after the restart', async () => {
    const first = await start();
    const sent = [await send(first.url, 0), await send(first.url, 1)];
    expect((await first.kill('SIGTERM')).code).toBe(0);

    const second = await start();
    const events = await admin(second.url, MAIN_EVENTS);
    expect(events.body.events.map((e: { id: string }) => e.id)).toContain(sent[0]?.id);
    expect((await admin(second.url, `/api/runs/${sent[1]?.id}`)).status).toBe(200);
  });
});

describe('idempotency across a restart', () => {
  it('replays the first answer after a SIGKILL and refuses a different body with 409', async () => {
    const body = { message: 'deploy v1.2.3', deliver: false };
    const first = await start();
    const original = await hook(first.url, 'agent', body, { 'Idempotency-Key': 'k1' });
    expect(original.status).toBe(202);
    const runId: string = original.body.runId;
    expect(runId).toEqual(expect.any(String));
    const wake = await hook(first.url, 'wake', { text: 'standard webhook' }, { 'webhook-id': 'msg_1' });
    expect(wake.status).toBe(200);
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');

    const second = await start();
    const replay = await hook(second.url, 'agent', body, { 'Idempotency-Key': 'k1' });
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ ok: true, runId });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const wakeReplay = await hook(
      second.url,
      'wake',
      { text: 'standard webhook' },
      { 'webhook-id': 'msg_1' },
    );
    expect(wakeReplay.status).toBe(200);
    expect(wakeReplay.body).toEqual(wake.body);
    expect(wakeReplay.headers.get('idempotent-replayed')).toBe('true');

    const conflict = await hook(
      second.url,
      'agent',
      { ...body, message: 'deploy v9' },
      { 'Idempotency-Key': 'k1' },
    );
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ ok: false, code: 'idempotency_conflict' });
    expect(conflict.headers.get('idempotent-replayed')).toBeNull();

    // The same key on another hook path is independent.
    const otherPath = await hook(second.url, 'wake', { text: 'other path' }, { 'Idempotency-Key': 'k1' });
    expect(otherPath.status).toBe(200);
    expect(otherPath.headers.get('idempotent-replayed')).toBeNull();

    expect((await admin(second.url, `/api/runs/${runId}`)).body.runId).toBe(runId);
    expect((await second.kill('SIGTERM')).code).toBe(0);

    // The replay and the conflict did no new work: one run, and the wake event once.
    const db = new Database(join(dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT id FROM runs').all()).toEqual([{ id: runId }]);
      expect(db.prepare(`SELECT count(*) AS n FROM events WHERE text = 'standard webhook'`).get()).toEqual({
        n: 1,
      });
    } finally {
      db.close();
    }
  });
});

describe('a port already in use', () => {
  it('makes run exit non-zero with a clear message, without a listening line', async () => {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    expect(port).toBeGreaterThan(0);

    const result = await runCli(['run', '--config', file, '--port', String(port)], {
      AGENTGATE_CONFIG: '',
      AGENTGATE_HOME: '',
      AGENTGATE_LOG_LEVEL: 'warn',
    });
    expect(result.code).not.toBeNull();
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toMatch(/listening/);
    expect(result.stderr).toMatch(/^agentgate: cannot start: .*(EADDRINUSE|address already in use)/m);
    expect(result.stderr).toContain(String(port));
  });
});
