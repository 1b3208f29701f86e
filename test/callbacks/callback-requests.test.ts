/**
 * What the ingress accepts as a callback (docs/callers.md, "Asking for one"): a
 * request's own `callbackUrl` must be an absolute http(s) URL without user info
 * (else 400 invalid_payload naming it) whose normalised origin is listed in
 * `hooks.callbacks.allowedOrigins` (else 400 callback_not_allowed); a mapping's
 * is the operator's. And the configuration refuses callbacks without a secret.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { startTestGateway, type TestGateway, tempDir, writeConfig } from '../helpers/gateway.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

describe('callbackUrl on requests and mappings', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      hooks: {
        callbacks: { secret: SECRET, allowedOrigins: ['https://CI.example.com', 'http://localhost:8080/'] },
        mappings: [{ id: 'ops', match: { path: 'ops' }, callbackUrl: 'https://ops.internal.example/done' }],
      },
    });
  });
  afterAll(() => gw.stop());

  const run = async (runId: string) => (await gw.admin(`/api/runs/${runId}`)).body;

  it.each([
    'https://ci.example.com/builds/42/done',
    'https://CI.EXAMPLE.COM:443/x?y=1',
    'http://localhost:8080/cb',
    'http://LOCALHOST:8080',
  ])('accepts %s (its normalised origin is allowed)', async (callbackUrl) => {
    const answer = await gw.hook('agent', { message: 'm', callbackUrl });
    expect(answer.status, answer.text).toBe(202);
    expect((await run(answer.body.runId)).callback).toEqual({ status: 'pending', attempts: 0 });
  });

  it.each([
    'http://ci.example.com/x',
    'https://ci.example.com:8443/x',
    'https://evil.example.com/x',
    'http://localhost:8081/x',
    'http://127.0.0.1:8080/x',
  ])('refuses %s with callback_not_allowed (origin not listed)', async (callbackUrl) => {
    const answer = await gw.hook('agent', { message: 'm', callbackUrl });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ ok: false, code: 'callback_not_allowed' });
    expect(answer.body.error).toMatch(
      /^callbackUrl: origin .* is not listed in hooks\.callbacks\.allowedOrigins$/,
    );
  });

  it.each([
    ['a relative path', '/builds/42'],
    ['no scheme', 'ci.example.com/x'],
    ['another scheme', 'ftp://ci.example.com/x'],
    ['not a URL', 'http://'],
    ['user info', 'https://user:secret@ci.example.com/x'],
    ['a number', 42],
    ['null', null],
    ['an object', { url: 'https://ci.example.com' }],
    ['empty', ''],
  ])('refuses %s with invalid_payload naming callbackUrl', async (_what, callbackUrl) => {
    const answer = await gw.hook('agent', { message: 'm', callbackUrl });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ ok: false, code: 'invalid_payload', field: 'callbackUrl' });
    expect(answer.body.error).toMatch(/^callbackUrl: /);
    expect(answer.text).not.toContain('secret@');
  });

  it("takes a mapping's callbackUrl without checking it against the allowed origins", async () => {
    const answer = await gw.hook('ops', { anything: true });
    expect(answer.status, answer.text).toBe(202);
    expect((await run(answer.body.runId)).callback).toEqual({ status: 'pending', attempts: 0 });
  });
});

describe('callback configuration', () => {
  const load = (hooks: Record<string, unknown>) => loadConfigFile(writeConfig(tempDir(), { hooks }), {});

  it('refuses allowed origins or a mapping callbackUrl without hooks.callbacks.secret', () => {
    for (const hooks of [
      { callbacks: { allowedOrigins: ['https://ci.example.com'] } },
      { mappings: [{ id: 'a', callbackUrl: 'https://ops.example.com/x' }] },
    ]) {
      const loaded = load(hooks);
      expect(loaded.ok).toBe(false);
      if (loaded.ok) continue;
      expect(loaded.problems).toEqual([
        expect.stringMatching(/^hooks\.callbacks\.secret: required once a callback/),
      ]);
    }
  });

  it('names a bad secret, origin and mapping callbackUrl by key', () => {
    const loaded = load({
      callbacks: { secret: 'hunter2', allowedOrigins: ['https://ci.example.com/path'] },
      mappings: [{ id: 'a', callbackUrl: 'not a url' }],
    });
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^hooks\.callbacks\.secret: must be "whsec_"/),
        expect.stringMatching(/^hooks\.callbacks\.allowedOrigins\[0\]: must be an origin/),
        'hooks.mappings[0].callbackUrl: must be an absolute http(s) URL',
      ]),
    );
    expect(loaded.problems.join('\n')).not.toContain('hunter2');
  });

  it('accepts a whsec_ secret with no callback configured, and unknown keys are refused', () => {
    expect(load({ callbacks: { secret: SECRET } }).ok).toBe(true);
    const typo = load({ callbacks: { secret: SECRET, allowedOrigin: ['https://x.example'] } });
    expect(typo.ok).toBe(false);
  });
});
