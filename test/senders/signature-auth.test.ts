/**
 * A hook its sender's signature opens (`auth: "signature"`; docs/senders.md, "Signatures as
 * the credential") over real HTTP: no hook token is asked for, a valid token does not stand in
 * for a bad signature, a token in the query is still refused, and bad signatures lock the
 * address out as bad tokens do (the lockout is by client address, so a real socket).
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const SECRET = 'github-webhook-secret-for-tests';
const SCOPED = 'scoped-token-0123456789abcdef0123456789';

const sign = (body: string, secret = SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('auth: "signature"', () => {
  let gw: TestGateway;
  const post = (name: string, body: string, headers: Record<string, string> = {}) =>
    gw.request(`/hooks/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });

  beforeAll(async () => {
    gw = await startTestGateway({
      hooks: {
        tokens: [{ id: 'ci', token: SCOPED, hooks: ['wake'] }],
        mappings: [
          {
            id: 'github',
            match: { path: 'github' },
            auth: 'signature',
            verify: { kind: 'github', secret: SECRET },
            messageTemplate: 'PR {{number}}',
          },
        ],
      },
    });
  });
  afterAll(() => gw.stop());

  it('accepts a signed delivery without any token; the run goes by the token id "signature"', async () => {
    const body = JSON.stringify({ number: 1 });
    const accepted = await post('github', body, { 'x-hub-signature-256': sign(body) });
    expect(accepted.status).toBe(202);
    const run = await gw.admin(`/api/runs/${accepted.body.runId}`);
    expect(run.body).toMatchObject({ source: 'hook:github', tokenId: 'signature' });
  });

  it('refuses a missing or bad signature with 401 invalid_signature, with or without a valid token', async () => {
    const body = JSON.stringify({ number: 2 });
    const missing = await post('github', body);
    expect(missing.status).toBe(401);
    expect(missing.body.code).toBe('invalid_signature');
    const withToken = await post('github', body, {
      authorization: `Bearer ${HOOK_TOKEN}`,
      'x-hub-signature-256': sign(body, 'not the secret'),
    });
    expect(withToken.status).toBe(401);
    expect(withToken.body.code).toBe('invalid_signature');
    // A token scoped elsewhere changes nothing either way: the signature decides.
    const scoped = await post('github', body, {
      authorization: `Bearer ${SCOPED}`,
      'x-hub-signature-256': sign(body),
    });
    expect(scoped.status).toBe(202);
  });

  it('still refuses a token in the query string, and other hooks still need their token', async () => {
    const body = JSON.stringify({ number: 3 });
    const query = await gw.request(`/hooks/github?token=${HOOK_TOKEN}`, {
      method: 'POST',
      headers: { 'x-hub-signature-256': sign(body) },
      body,
    });
    expect(query.status).toBe(400);
    expect(query.body.code).toBe('token_in_query');
    const wake = await post('wake', JSON.stringify({ text: 'no token' }));
    expect(wake.status).toBe(401);
    expect(wake.body.code).toBe('unauthorized');
  });

  it('counts bad signatures toward the lockout: the 21st attempt is 429, even signed', async () => {
    const body = JSON.stringify({ number: 4 });
    const bad = sign(body, 'forged');
    // A success first clears what the earlier cases failed from this address.
    expect((await post('github', body, { 'x-hub-signature-256': sign(body) })).status).toBe(202);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++)
      statuses.push((await post('github', body, { 'x-hub-signature-256': bad })).status);
    expect(statuses).toEqual(Array(20).fill(401));
    const locked = await post('github', body, { 'x-hub-signature-256': sign(body) });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    const wake = await gw.hook('wake', { text: 'valid token, locked address' });
    expect(wake.status).toBe(429);
  });
});

describe('auth: "signature" in the config', () => {
  it('needs verify, naming the key', async () => {
    await expect(
      startTestGateway({ hooks: { mappings: [{ id: 'x', match: { path: 'x' }, auth: 'signature' }] } }),
    ).rejects.toThrow(/hooks\.mappings\[0\]\.auth: "signature" needs verify/);
  });

  it('needs no hook token when a signed sender is all there is; the built-in hooks then refuse', async () => {
    const gw = await startTestGateway({
      hooks: {
        token: undefined,
        mappings: [
          {
            id: 'gitlab',
            match: { path: 'gitlab' },
            auth: 'signature',
            verify: { kind: 'gitlab', secret: SECRET },
          },
        ],
      },
    });
    try {
      const body = JSON.stringify({ object_kind: 'push' });
      const accepted = await gw.request('/hooks/gitlab', {
        method: 'POST',
        headers: { 'x-gitlab-token': SECRET },
        body,
      });
      expect(accepted.status).toBe(202);
      const agent = await gw.hook('agent', { message: 'hello' });
      expect(agent.status).toBe(401);
    } finally {
      await gw.stop();
    }
  });
});
