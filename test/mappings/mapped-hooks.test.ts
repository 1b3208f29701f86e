/**
 * Mapped hooks over real HTTP: matching, templates, transforms, fan-out, the
 * gmail preset, provider signatures and reload.
 */
import { createHmac } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  baseConfig,
  HOOK_TOKEN,
  merge,
  startTestGateway,
  type TestGateway,
  tempDir,
} from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';

const GITHUB_SECRET = 'gh-secret-for-tests';

function writeTransforms(dir: string): void {
  const root = join(dir, 'hooks', 'transforms');
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, 'ci.mjs'),
    `export default async ({ payload, headers }) => {
       if (payload.status === 'ok') return null;
       if (payload.status === 'boom') throw new Error('secret detail that must not leak');
       if (payload.status === 'hang') return new Promise(() => {});
       if (payload.status === 'wake') return { kind: 'wake', text: 'CI says: ' + payload.job };
       return { message: 'Job ' + payload.job + ' failed on ' + headers['x-ci-host'], name: 'CI' };
     };`,
  );
  writeFileSync(
    join(root, 'typed.ts'),
    `interface Payload { title: string }
     export function transform({ payload }: { payload: Payload }): { message: string } {
       const title: string = payload.title.toUpperCase();
       return { message: 'TS: ' + title };
     }`,
  );
}

const MAPPINGS = [
  {
    id: 'wake-map',
    match: { path: 'deploy' },
    action: 'wake',
    textTemplate: 'Deployed {{service}} ({{query.env}})',
  },
  {
    id: 'github',
    match: { path: 'github' },
    name: 'GitHub',
    messageTemplate: '{{headers.x-github-event}}: {{pull_request.title}} by {{pull_request.user.login}}',
    sessionKey: 'hook:github:{{number}}',
    verify: { kind: 'github', secret: GITHUB_SECRET },
    deliver: false,
  },
  { id: 'by-source', match: { source: 'billing' }, messageTemplate: 'Billing: {{event}}', deliver: false },
  { id: 'both', match: { path: 'ingest', source: 'ci' }, transform: { module: 'ci.mjs' }, deliver: false },
  { id: 'typed', match: { path: 'typed' }, transform: { module: 'typed.ts' }, deliver: false },
  { id: 'fan', match: { path: 'batch' }, forEach: 'items', messageTemplate: 'Item {{name}}', deliver: false },
  { id: 'empty', match: { path: 'empty' }, messageTemplate: '{{missing}}' },
  {
    id: 'leaky',
    match: { path: 'leaky' },
    messageTemplate:
      'auth=[{{headers.authorization}}] token=[{{headers.x-agentgate-token}}] cookie=[{{headers.cookie}}] x=[{{x}}]',
    deliver: false,
  },
  { id: 'shadow', match: { path: 'wake' }, messageTemplate: 'never used' },
  { id: 'first', match: { path: 'twice' }, messageTemplate: 'first wins', deliver: false },
  { id: 'second', match: { path: 'twice' }, messageTemplate: 'second', deliver: false },
];

describe('mapped hooks', () => {
  let gw: TestGateway;
  let dir: string;
  const runMessage = (runId: string) => {
    const db = new Database(join(dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      return (db
        .prepare('SELECT message, session_key AS sessionKey, name FROM runs WHERE id = ?')
        .get(runId) ?? {}) as {
        message?: string;
        sessionKey?: string;
        name?: string;
      };
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    dir = tempDir('agentgate-mapped-');
    writeTransforms(dir);
    gw = await startTestGateway(
      {
        hooks: {
          mappings: MAPPINGS,
          presets: ['gmail'],
          allowRequestSessionKey: true,
          allowedSessionKeyPrefixes: ['hook:'],
        },
      },
      { dir },
    );
  });
  afterAll(async () => {
    await gw.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a wake mapping renders its text from the payload and the query', async () => {
    const response = await fetch(`${gw.url}/hooks/deploy?env=prod`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      body: JSON.stringify({ service: 'api' }),
    });
    const body = await response.json();
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ ok: true, eventOutcome: 'queued' });
    const events = (await gw.admin('/api/sessions/agent:main:main/events')).body.events;
    expect(events.at(-1)).toMatchObject({ text: 'Deployed api (prod)', source: 'hook:deploy' });
  });

  it('/wake and /agent take precedence over mappings; the first matching mapping wins', async () => {
    expect((await gw.hook('wake', { text: 'direct' })).body).toMatchObject({
      ok: true,
      eventOutcome: 'queued',
    });
    const twice = await gw.hook('twice', {});
    expect(runMessage(twice.body.runId).message).toBe('first wins');
  });

  it('matches on the payload source, and on path and source together', async () => {
    const billing = await gw.hook('anything', { source: 'billing', event: 'invoice.paid' });
    expect(billing.status).toBe(202);
    expect(runMessage(billing.body.runId).message).toBe('Billing: invoice.paid');
    expect((await gw.hook('ingest', { source: 'other', job: 'x' })).status).toBe(404);
    expect((await gw.hook('nothing-here', { source: 'nobody' })).status).toBe(404);
  });

  it('never shows the gateway credentials to templates', async () => {
    // Both credential headers, carrying the same token (different ones would be ambiguous_credentials).
    const response = await gw.hook('leaky', { x: 1 }, { 'x-agentgate-token': HOOK_TOKEN, cookie: 'c=1' });
    expect(response.status).toBe(202);
    expect(runMessage(response.body.runId).message).toBe('auth=[] token=[] cookie=[] x=[1]');
  });

  it('a templated session key obeys the session key policy and prefixes', async () => {
    const payload = JSON.stringify({ number: 7, pull_request: { title: 'Fix', user: { login: 'ada' } } });
    const signature = `sha256=${createHmac('sha256', GITHUB_SECRET).update(payload).digest('hex')}`;
    const response = await gw.hook('github', payload, {
      'x-hub-signature-256': signature,
      'x-github-event': 'pull_request',
    });
    expect(response.status).toBe(202);
    expect(runMessage(response.body.runId)).toMatchObject({
      message: 'pull_request: Fix by ada',
      sessionKey: 'hook:github:7',
      name: 'GitHub',
    });
  });

  it('refuses a bad signature with 401, and those failures count toward the lockout', async () => {
    const payload = JSON.stringify({ number: 8 });
    const forged = `sha256=${createHmac('sha256', 'wrong').update(payload).digest('hex')}`;
    const refused = await gw.hook('github', payload, { 'x-hub-signature-256': forged });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('unauthorized');
    const good = `sha256=${createHmac('sha256', GITHUB_SECRET).update(payload).digest('hex')}`;
    const tampered = await gw.hook('github', `${payload} `, { 'x-hub-signature-256': good });
    expect(tampered.status).toBe(401);
    for (let i = 0; i < 18; i++) await gw.hook('github', payload, { 'x-hub-signature-256': forged });
    const locked = await gw.hook('wake', { text: 'valid token, but locked out' });
    expect(locked.status).toBe(429);
  });
});

describe('transforms, fan-out, presets and reload', () => {
  let gw: TestGateway;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('agentgate-transform-');
    writeTransforms(dir);
    gw = await startTestGateway({ hooks: { mappings: MAPPINGS, presets: ['gmail'] } }, { dir });
  });
  afterAll(async () => {
    await gw.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs transforms: partial action, switch to wake, null → 204, throw → 500 without detail', async () => {
    const agent = await gw.hook(
      'ingest',
      { source: 'ci', job: 'build', status: 'failed' },
      { 'x-ci-host': 'ci-1' },
    );
    expect(agent.status).toBe(202);
    const wake = await gw.hook('ingest', { source: 'ci', job: 'deploy', status: 'wake' });
    expect(wake.status).toBe(200);
    const skipped = await gw.hook('ingest', { source: 'ci', status: 'ok' });
    expect(skipped.status).toBe(204);
    expect(skipped.text).toBe('');
    const thrown = await gw.hook('ingest', { source: 'ci', status: 'boom' });
    expect(thrown.status).toBe(500);
    expect(thrown.body).toMatchObject({ ok: false, code: 'mapping_failed' });
    expect(thrown.text).not.toContain('secret detail');
  });

  it('loads a TypeScript transform', async () => {
    const response = await gw.hook('typed', { title: 'hello' });
    expect(response.status).toBe(202);
  });

  it('cuts off a transform that never settles', async () => {
    const started = Date.now();
    const hung = await gw.hook('ingest', { source: 'ci', status: 'hang' });
    expect(hung.status).toBe(500);
    expect(hung.body.code).toBe('mapping_failed');
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 20_000);

  it('fans out with forEach, one run per element, and caps the fan-out', async () => {
    const fan = await gw.hook('batch', { items: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    expect(fan.status).toBe(202);
    expect(fan.body.runIds).toHaveLength(3);
    const tooMany = await gw.hook('batch', {
      items: Array.from({ length: 101 }, (_, i) => ({ name: `n${i}` })),
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.field).toBe('items');
    expect((await gw.hook('batch', { items: 'nope' })).status).toBe(400);
  });

  it('refuses an action whose required text renders empty', async () => {
    const empty = await gw.hook('empty', {});
    expect(empty.status).toBe(400);
    expect(empty.body).toMatchObject({ code: 'invalid_payload', field: 'message' });
  });

  it('the gmail preset makes one run per message in its own session', async () => {
    const response = await gw.hook('gmail', {
      messages: [
        {
          id: 'm1',
          from: 'Ada <ada@example.com>',
          subject: 'Invoice',
          snippet: 'Please pay',
          body: 'Please pay 10 EUR',
        },
        { id: 'm2', from: 'Bob <bob@example.com>', subject: 'Lunch?', snippet: 'Noon?' },
      ],
    });
    expect(response.status).toBe(202);
    expect(response.body.runIds).toHaveLength(2);
    const run = (await gw.admin(`/api/runs/${response.body.runIds[0]}`)).body;
    expect(run.sessionKey).toBe('hook:gmail:m1');
    expect((await gw.hook('gmail', { messages: [{ subject: 'no id' }] })).status).toBe(400);
  });

  it('reloads the hooks section when the file changes, and keeps it when an edit is invalid', async () => {
    expect((await gw.hook('added-later', {})).status).toBe(404);
    const path = join(dir, 'agentgate.json5');
    const next = merge(baseConfig(), {
      hooks: {
        mappings: [
          ...MAPPINGS,
          { id: 'later', match: { path: 'added-later' }, messageTemplate: 'new', deliver: false },
        ],
        presets: ['gmail'],
      },
    });
    writeFileSync(path, JSON.stringify(next), { mode: 0o600 });
    await waitFor(
      async () => ((await gw.hook('added-later', {})).status === 202 ? true : undefined),
      'the reload',
    );

    writeFileSync(path, JSON.stringify(merge(next, { hooks: { tokn: 'typo' } })), { mode: 0o600 });
    // A check that nothing happens: the valid edit above took effect within the watcher's 200 ms
    // debounce and a read; 800 ms gives the invalid one as long to (wrongly) replace the hooks.
    await sleep(800);
    expect((await gw.hook('added-later', {})).status).toBe(202);
  });
});
