/**
 * Senders with keys of their own (docs/senders.md), over real HTTP: several
 * hook tokens, each opening its hooks only (403 token_not_allowed), from its
 * sources only (403 source_not_allowed), until it expires (401, counted);
 * the order of the checks; the lockout, which a 403 neither feeds nor clears;
 * the `token` label of the request counter; and a reload that adds, removes
 * and expires tokens without a restart.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { baseConfig, HOOK_TOKEN, merge, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { parseExposition, seriesOf } from '../metrics/exposition.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const GITHUB = 'github-token-0123456789abcdef01234567';
const CI = 'ci-token-0123456789abcdef0123456789ab';
const OPS = 'ops-token-0123456789abcdef012345678901';
const OLD = 'old-token-0123456789abcdef012345678901';

const MAPPINGS = [
  { id: 'github', match: { path: 'github' }, action: 'wake', textTemplate: 'push to {{repository}}' },
  { id: 'deploys', match: { path: 'deploy' }, action: 'wake', textTemplate: 'deploy {{service}}' },
];

const tokensConfig = (tokens: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  gateway: { trustedProxies: ['127.0.0.1', '::1'] },
  hooks: { mappings: MAPPINGS, tokens, ...extra },
});

const SENDERS = [
  { id: 'github', token: GITHUB, hooks: ['github'] },
  {
    id: 'ci',
    token: CI,
    hooks: ['agent', 'wake', 'runs'],
    allowedSources: ['10.20.0.0/16', '2001:db8::/32'],
  },
  { id: 'ops', token: OPS },
];

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.stop();
  gw = undefined;
});

/** A hook request with `token`, as if from `from` (X-Forwarded-For, the peer being a trusted proxy). */
async function send(name: string, token: string, body: unknown = { text: 'hi' }, from?: string) {
  return (gw as TestGateway).hook(name, body, {
    authorization: `Bearer ${token}`,
    ...(from ? { 'x-forwarded-for': from } : {}),
  });
}

describe('scoped hook tokens', () => {
  it('opens the hooks a token lists, and answers 403 token_not_allowed for the others', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    expect((await send('github', GITHUB, { repository: 'app' })).status).toBe(200);
    for (const name of ['wake', 'agent', 'deploy']) {
      const answer = await send(name, GITHUB, { text: 'x', message: 'x', service: 'x' });
      expect(answer.status, name).toBe(403);
      expect(answer.body).toEqual({
        ok: false,
        code: 'token_not_allowed',
        error: `this hook token does not open the hook "${name}"`,
      });
    }
    // An unscoped token and hooks.token open every hook.
    for (const token of [OPS, HOOK_TOKEN]) {
      expect((await send('deploy', token, { service: 'api' })).status).toBe(200);
      expect((await send('wake', token)).status).toBe(200);
    }
  });

  it('answers a scoped token 403 for a hook that does not exist, an unscoped one 404', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    expect((await send('nope', GITHUB)).body.code).toBe('token_not_allowed');
    expect((await send('nope', OPS)).status).toBe(404);
  });

  it('needs "runs" in the scope to read a run with the hook token', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    const accepted = await send('agent', CI, { message: 'hello', deliver: false }, '10.20.1.1');
    expect(accepted.status).toBe(202);
    const read = (token: string, from = '10.20.1.1') =>
      fetch(`${gw?.url}/hooks/runs/${accepted.body.runId}`, {
        headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': from },
      });
    expect((await read(CI)).status).toBe(200);
    expect((await read(OPS)).status).toBe(200);
    const refused = await read(GITHUB);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('token_not_allowed');
    expect((await read(CI, '192.0.2.1')).status).toBe(403);
  });
});

describe('source allow-lists', () => {
  it("takes a token's requests from its sources only, IPv4 and IPv6", async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    expect((await send('wake', CI, { text: 'in' }, '10.20.7.9')).status).toBe(200);
    expect((await send('wake', CI, { text: 'in' }, '2001:db8:1::7')).status).toBe(200);
    for (const from of ['10.21.0.1', '2001:db9::1', '127.0.0.1']) {
      const answer = await send('wake', CI, { text: 'out' }, from);
      expect(answer.status, from).toBe(403);
      expect(answer.body).toEqual({
        ok: false,
        code: 'source_not_allowed',
        error: `this hook token is not accepted from ${from}`,
      });
    }
    // Another token has no list of its own: any source.
    expect((await send('wake', OPS, { text: 'x' }, '203.0.113.5')).status).toBe(200);
  });

  it('holds every token to hooks.allowedSources', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS, { allowedSources: ['10.0.0.0/8', '198.51.100.7'] }));
    expect((await send('wake', OPS, { text: 'x' }, '198.51.100.7')).status).toBe(200);
    expect((await send('wake', HOOK_TOKEN, { text: 'x' }, '10.1.2.3')).status).toBe(200);
    const outside = await send('wake', HOOK_TOKEN, { text: 'x' }, '198.51.100.8');
    expect(outside.status).toBe(403);
    expect(outside.body.error).toBe('hook requests are not accepted from 198.51.100.8');
    // Both lists hold: inside the global one, outside the token's own.
    expect((await send('wake', CI, { text: 'x' }, '10.99.0.1')).body.code).toBe('source_not_allowed');
  });

  it('checks in order: token, then scope, then sources, then the hook name', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    // A wrong token from a refused source is a 401: the source is only looked at for a valid token.
    expect((await send('wake', `${CI}x`, { text: 'x' }, '192.0.2.1')).status).toBe(401);
    // Outside both its scope and its sources: the scope speaks first.
    expect((await send('deploy', CI, { service: 'x' }, '192.0.2.1')).body.code).toBe('token_not_allowed');
    // A token in the query is refused before anything else, a wrong method next.
    const inQuery = await fetch(`${gw.url}/hooks/wake?token=${CI}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CI}`, 'x-forwarded-for': '192.0.2.1' },
      body: '{}',
    });
    expect(inQuery.status).toBe(400);
    const get = await fetch(`${gw.url}/hooks/deploy`, {
      headers: { authorization: `Bearer ${CI}`, 'x-forwarded-for': '192.0.2.1' },
    });
    expect(get.status).toBe(405);
  });
});

describe('the lockout and expiry', () => {
  it('counts neither a 403 toward the lockout nor as a success that clears it', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    const wrong = () => send('wake', 'not-a-token-not-a-token-not-a-token');
    for (let i = 0; i < 10; i++) expect((await wrong()).status).toBe(401);
    for (let i = 0; i < 30; i++) expect((await send('agent', GITHUB)).status).toBe(403);
    for (let i = 0; i < 10; i++) expect((await wrong()).status).toBe(401);
    // 20 failures: the 21st attempt is locked out, the 403s in between changed nothing.
    expect((await wrong()).status).toBe(429);
  });

  it('treats a token past its notAfter as unknown: 401, counted', async () => {
    const soon = new Date(Date.now() + 1500).toISOString();
    gw = await startTestGateway(
      tokensConfig([
        { id: 'old', token: OLD, notAfter: soon },
        { id: 'ops', token: OPS },
      ]),
    );
    expect((await send('wake', OLD)).status).toBe(200);
    await waitFor(async () => ((await send('wake', OLD)).status === 401 ? true : undefined), 'the expiry');
    for (let i = 0; i < 19; i++) expect((await send('wake', OLD)).status).toBe(401);
    expect((await send('wake', OLD)).status).toBe(429);
  });
});

describe('the token label and a reload', () => {
  it('counts answers by token id, none before a token matched', async () => {
    gw = await startTestGateway(tokensConfig(SENDERS));
    await send('github', GITHUB, { repository: 'app' });
    await send('wake', GITHUB);
    await send('wake', HOOK_TOKEN);
    await send('wake', 'wrong-wrong-wrong-wrong-wrong');
    const response = await fetch(`${gw.url}/metrics`, {
      headers: { authorization: `Bearer ${(gw.config.gateway.auth.token as string) ?? ''}` },
    });
    const series = seriesOf(parseExposition(await response.text()), 'agentgate_hook_requests_total');
    expect(series).toEqual({
      'hook=github,code=200,token=github': 1,
      'hook=wake,code=403,token=github': 1,
      'hook=wake,code=200,token=default': 1,
      'hook=wake,code=401,token=none': 1,
    });
  });

  it('applies added, removed and expired tokens on reload, without a restart', async () => {
    gw = await startTestGateway(tokensConfig([{ id: 'old', token: OLD }]));
    expect((await send('wake', OLD)).status).toBe(200);
    expect((await send('wake', CI)).status).toBe(401);
    const path = join(gw.dir, 'agentgate.json5');
    // Rotation: the new token is added while the old one still works...
    const both = merge(
      baseConfig(),
      tokensConfig([
        { id: 'old', token: OLD },
        { id: 'new', token: CI, hooks: ['wake'] },
      ]),
    );
    writeFileSync(path, JSON.stringify(both), { mode: 0o600 });
    await waitFor(async () => ((await send('wake', CI)).status === 200 ? true : undefined), 'the new token');
    expect((await send('wake', OLD)).status).toBe(200);
    expect((await send('agent', CI, { message: 'x' })).status).toBe(403);
    // ...then the old one is expired (a notAfter in the past) and refused from then on.
    const expired = merge(
      baseConfig(),
      tokensConfig([
        { id: 'old', token: OLD, notAfter: '2020-01-01T00:00:00Z' },
        { id: 'new', token: CI, hooks: ['wake'] },
      ]),
    );
    writeFileSync(path, JSON.stringify(expired), { mode: 0o600 });
    await waitFor(async () => ((await send('wake', OLD)).status === 401 ? true : undefined), 'the expiry');
    expect((await send('wake', CI)).status).toBe(200);
    // And removed: gone for good.
    writeFileSync(path, JSON.stringify(merge(baseConfig(), tokensConfig([]))), { mode: 0o600 });
    await waitFor(async () => ((await send('wake', CI)).status === 401 ? true : undefined), 'the removal');
    expect((await send('wake', HOOK_TOKEN)).status).toBe(200);
  });
});

describe.each(PG_ENABLED ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const))(
  'the token id on what it accepted (%s)',
  (driver) => {
    let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
    afterEach(async () => {
      await gw?.stop();
      gw = undefined;
      await database?.drop();
      database = undefined;
    });

    it('records the id with each run and event, and lists runs by it', async () => {
      if (driver === 'postgres') database = await createTestDatabase();
      gw = await startTestGateway({
        ...tokensConfig(SENDERS),
        ...(database ? { store: { driver: 'postgres', url: database.url } } : {}),
      });
      const byCi = await send('agent', CI, { message: 'from ci', deliver: false }, '10.20.0.1');
      const byOps = await send('agent', OPS, { message: 'from ops', deliver: false });
      const byDefault = await send('agent', HOOK_TOKEN, { message: 'from default', deliver: false });
      const wake = await send('github', GITHUB, { repository: 'app' });
      expect([byCi.status, byOps.status, byDefault.status, wake.status]).toEqual([202, 202, 202, 200]);

      expect((await gw.admin(`/api/runs/${byCi.body.runId}`)).body.tokenId).toBe('ci');
      expect((await gw.admin(`/api/runs/${byDefault.body.runId}`)).body.tokenId).toBe('default');
      const listed = await gw.admin('/api/runs?tokenId=ops');
      expect(listed.body.runs.map((run: { runId: string }) => run.runId)).toEqual([byOps.body.runId]);
      const events = await gw.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/events`);
      expect(
        events.body.events.find((event: { id: string }) => event.id === wake.body.eventId),
      ).toMatchObject({
        tokenId: 'github',
      });

      // The caller follows its run with its own token, and sees which token started it.
      const status = await fetch(`${gw.url}/hooks/runs/${byCi.body.runId}`, {
        headers: { authorization: `Bearer ${CI}`, 'x-forwarded-for': '10.20.0.1' },
      });
      expect(((await status.json()) as { tokenId: string }).tokenId).toBe('ci');
    });
  },
);

describe('a token from a secret file', () => {
  it('applies a rotated file without a restart: the old token refused, the new one taken', async () => {
    const secrets = mkdtempSync(join(tmpdir(), 'agentgate-secrets-'));
    const secret = join(secrets, 'ci_hook');
    writeFileSync(secret, `${OLD}\n`, { mode: 0o600 });
    try {
      gw = await startTestGateway(tokensConfig([{ id: 'ci', token: `\${file:${secret}}` }]));
      expect((await send('wake', OLD)).status).toBe(200);
      // As Kubernetes does it: the folder's content changes, not the config file.
      writeFileSync(secret, `${CI}\n`, { mode: 0o600 });
      await waitFor(
        async () => ((await send('wake', CI)).status === 200 ? true : undefined),
        'the new secret',
      );
      expect((await send('wake', OLD)).status).toBe(401);
    } finally {
      rmSync(secrets, { recursive: true, force: true });
    }
  });
});
