/**
 * `GET {hooks_path}/runs/{runId}` with the hook token (docs/callers.md,
 * "Following a run"): the run's RunView, 404 for an unknown id, and the same
 * checks as every hook path in the same order — token in the query, method,
 * lockout, token — with failed tokens counted toward the lockout. The name `runs`
 * is reserved.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { BEARER, expectError, postHook, send } from './support.js';

const BAD = { authorization: 'Bearer wrong-token-0123456789abcdef0123' };
const from = (client: string, headers: Record<string, string>) => ({ ...headers, 'x-forwarded-for': client });

describe('GET {hooks_path}/runs/{runId}', () => {
  let gw: TestGateway;
  let runId: string;
  beforeAll(async () => {
    gw = await startTestGateway({ gateway: { trustedProxies: ['127.0.0.1'] } }, { inject: true });
    const accepted = await gw.hook('agent', { message: 'follow me', deliver: false });
    expect(accepted.status).toBe(202);
    runId = accepted.body.runId;
  });
  afterAll(() => gw.stop());

  const status = (id: string, headers: Record<string, string> = BEARER, method = 'GET') =>
    send(gw, `/hooks/runs/${id}`, { method, headers });

  it('answers the RunView with the hook token, as the admin API shows it', async () => {
    const answer = await status(runId);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    // Every field is the admin API's too (which may add operator fields of its own).
    expect((await gw.admin(`/api/runs/${runId}`)).body).toMatchObject(answer.body);
    expect(answer.body).toMatchObject({
      runId,
      status: 'queued',
      agentId: 'main',
      startedAt: null,
      finishedAt: null,
      reply: null,
      error: null,
      delivery: { status: 'none', channel: null, to: null, reason: null },
    });
    // The token may come in either header.
    expect((await status(runId, { 'x-agentgate-token': HOOK_TOKEN })).status).toBe(200);
  });

  it('answers 404 not_found for an unknown run id', async () => {
    expectError(await status('run_00000000-0000-7000-8000-000000000000'), 404, 'not_found');
    expectError(await status('nope'), 404, 'not_found');
  });

  it('refuses a missing or wrong token, and the admin token, with 401', async () => {
    expectError(await status(runId, {}), 401, 'unauthorized');
    expectError(await status(runId, from('203.0.113.1', BAD)), 401, 'unauthorized');
    expectError(await status(runId, { authorization: `Bearer ${ADMIN_TOKEN}` }), 401, 'unauthorized');
  });

  it('refuses a token in the query string first (400), then any method but GET (405, Allow: GET)', async () => {
    expectError(await status(`${runId}?token=${HOOK_TOKEN}`), 400, 'token_in_query');
    expectError(await status(`${runId}?token=x`, {}, 'POST'), 400, 'token_in_query');
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const answer = await status(runId, BEARER, method);
      expectError(answer, 405, 'method_not_allowed');
      expect(answer.headers.get('allow')).toBe('GET');
    }
  });

  it('counts failed tokens toward the lockout, together with the other hook paths', async () => {
    const client = '203.0.113.7';
    for (let i = 0; i < 10; i++) expectError(await status(runId, from(client, BAD)), 401, 'unauthorized');
    for (let i = 0; i < 10; i++) {
      expectError(await postHook(gw, 'wake', { text: 'x' }, from(client, BAD)), 401, 'unauthorized');
    }
    // The 21st attempt, with the right token, on either path: locked out.
    const locked = await status(runId, from(client, BEARER));
    expectError(locked, 429, 'rate_limited');
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expectError(await postHook(gw, 'wake', { text: 'x' }, from(client, BEARER)), 429, 'rate_limited');
    // Another address is not affected.
    expect((await status(runId, from('203.0.113.8', BEARER))).status).toBe(200);
  });

  it('leaves other hook names alone: POST {hooks_path}/runs is no hook (404), GET on a hook is 405', async () => {
    expectError(await postHook(gw, 'runs', { message: 'x' }, BEARER), 404, 'not_found');
    expectError(
      await send(gw, '/hooks/agent', { method: 'GET', headers: BEARER }),
      405,
      'method_not_allowed',
    );
  });
});

describe('the hook name "runs" is reserved', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir('agentgate-runs-name-');
    mkdirSync(dir, { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const load = (mappings: unknown[]) => {
    const path = join(dir, 'agentgate.json5');
    writeFileSync(
      path,
      JSON.stringify({
        gateway: { auth: { token: ADMIN_TOKEN } },
        hooks: { enabled: true, token: HOOK_TOKEN, mappings },
      }),
    );
    return loadConfigFile(path, {});
  };

  it('refuses a mapping whose match.path is "runs" or under it, naming the key', () => {
    const result = load([
      { id: 'ok', match: { path: 'runsheet' } },
      { id: 'taken', match: { path: 'runs' } },
      { id: 'under', match: { path: 'runs/x' } },
    ]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      expect.stringMatching(/^hooks\.mappings\[1\]\.match\.path: "runs" is reserved/),
      expect.stringMatching(/^hooks\.mappings\[2\]\.match\.path: "runs\/x" is reserved/),
    ]);
  });
});
