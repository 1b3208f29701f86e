/**
 * Where the token may and may not be (docs/authentication.md):
 * - any query key that reads `token` ignoring ASCII case, percent-encoding and a
 *   trailing bracket part is refused 400 `token_in_query`, like `?token=`;
 * - a repeated `Authorization` or `x-agentgate-token` header, or a Bearer token
 *   and an `x-agentgate-token` that differ, is refused 400 `ambiguous_credentials`
 *   — never picked or joined — and does not count toward the lockout.
 * The header and query parsing on their own: test/auth/token.test.ts and
 * test/auth/query-token.test.ts.
 * fetch cannot send a header twice, so those requests go over raw sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OTHER_KEYS, TOKEN_KEYS } from '../auth/token-keys.js';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { BEARER, expectError, listEvents, postHook, RawClient, type RawResponse, send } from './support.js';

const WRONG = 'wrong-token-0123456789abcdef0123';

/** One raw HTTP/1.1 request with exactly the header lines given (repeats included). */
async function rawRequest(
  gw: TestGateway,
  path: string,
  headerLines: string[],
  options: { method?: string; body?: string } = {},
): Promise<RawResponse> {
  const client = await RawClient.open(gw);
  try {
    const body = options.body ?? (options.method === 'GET' ? '' : '{"text":"raw"}');
    const head = [
      `${options.method ?? 'POST'} ${path} HTTP/1.1`,
      'Host: 127.0.0.1',
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      ...headerLines,
    ];
    await client.write(`${head.join('\r\n')}\r\n\r\n${body}`);
    return await client.response();
  } finally {
    client.close();
  }
}

function expectRawError(response: RawResponse, status: number, code: string): void {
  expect({ status: response.status, code: response.json?.code }, response.body).toEqual({ status, code });
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json.ok).toBe(false);
  expect(response.json.error.length).toBeGreaterThan(0);
}

describe('over HTTP (behind a trusted loopback proxy, so X-Forwarded-For names the client)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ gateway: { trustedProxies: ['127.0.0.1'] } });
  });
  afterAll(() => gw.stop());

  it.each(TOKEN_KEYS)(
    'refuses ?%s= with 400 token_in_query on hooks, the 405 path and the admin API',
    async (key) => {
      const body = JSON.stringify({ text: `query ${key}` });
      expectError(await send(gw, `/hooks/wake?${key}=x`, { headers: BEARER, body }), 400, 'token_in_query');
      expectError(
        await send(gw, `/hooks/wake?${key}=${HOOK_TOKEN}`, { method: 'GET', headers: BEARER }),
        400,
        'token_in_query',
      );
      // A method without a hook route is answered by the not-found handler (405), after the same check.
      expectError(
        await send(gw, `/hooks/wake?${key}=x`, { method: 'PROPFIND', headers: BEARER }),
        400,
        'token_in_query',
      );
      expectError(
        await send(gw, `/api/runs/x?${key}=x`, {
          method: 'GET',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        }),
        400,
        'token_in_query',
      );
    },
  );

  it('accepts keys that only resemble token', async () => {
    const query = OTHER_KEYS.map((key) => `${key}=1`).join('&');
    const answer = await postHook(gw, `wake?${query}`, { text: 'look-alike keys pass' }, BEARER);
    expect(answer.status, answer.text).toBe(200);
    const propfind = await send(gw, `/hooks/wake?${query}`, { method: 'PROPFIND', headers: BEARER });
    expectError(propfind, 405, 'method_not_allowed');
  });

  it('refuses two Authorization headers on a hook, whichever of them is right, and commits nothing', async () => {
    for (const pair of [
      [HOOK_TOKEN, HOOK_TOKEN],
      [HOOK_TOKEN, WRONG],
      [WRONG, HOOK_TOKEN],
    ]) {
      const response = await rawRequest(gw, '/hooks/wake', [
        `Authorization: Bearer ${pair[0]}`,
        `authorization: Bearer ${pair[1]}`,
      ]);
      expectRawError(response, 400, 'ambiguous_credentials');
      expect(response.json.error).toMatch(/Authorization/);
    }
    const events = await listEvents(gw);
    expect(events.map((event) => event.text)).not.toContain('raw');
  });

  it('refuses two x-agentgate-token headers, and a Bearer token that differs from x-agentgate-token', async () => {
    expectRawError(
      await rawRequest(gw, '/hooks/wake', [
        `x-agentgate-token: ${HOOK_TOKEN}`,
        `X-Agentgate-Token: ${HOOK_TOKEN}`,
      ]),
      400,
      'ambiguous_credentials',
    );
    expectRawError(
      await rawRequest(gw, '/hooks/wake', [
        `Authorization: Bearer ${HOOK_TOKEN}`,
        `x-agentgate-token: ${WRONG}`,
      ]),
      400,
      'ambiguous_credentials',
    );
    expectRawError(
      await rawRequest(gw, '/hooks/wake', [
        `Authorization: Bearer ${WRONG}`,
        `x-agentgate-token: ${HOOK_TOKEN}`,
      ]),
      400,
      'ambiguous_credentials',
    );
  });

  it('accepts the same token in both headers, and x-agentgate-token next to a Basic Authorization', async () => {
    const same = await rawRequest(gw, '/hooks/wake', [
      `Authorization: Bearer ${HOOK_TOKEN}`,
      `x-agentgate-token: ${HOOK_TOKEN}`,
    ]);
    expect(same.status, same.body).toBe(200);
    const basic = await rawRequest(gw, '/hooks/wake', [
      'Authorization: Basic dXNlcjpwYXNz',
      `x-agentgate-token: ${HOOK_TOKEN}`,
    ]);
    expect(basic.status, basic.body).toBe(200);
  });

  it('refuses two Authorization headers on the admin API', async () => {
    const response = await rawRequest(
      gw,
      '/api/runs/x',
      [`Authorization: Bearer ${ADMIN_TOKEN}`, `Authorization: Bearer ${ADMIN_TOKEN}`],
      { method: 'GET' },
    );
    expectRawError(response, 400, 'ambiguous_credentials');
  });

  it('does not count ambiguous credentials as failures, and checks them after the query token and the lockout', async () => {
    const client = 'X-Forwarded-For: 198.51.100.40';
    const twice = [`Authorization: Bearer ${WRONG}`, `Authorization: Bearer ${WRONG}`];
    for (let i = 0; i < 25; i++) {
      expectRawError(await rawRequest(gw, '/hooks/wake', [client, ...twice]), 400, 'ambiguous_credentials');
    }
    expectRawError(await rawRequest(gw, '/hooks/wake?token=x', [client, ...twice]), 400, 'token_in_query');
    for (let i = 0; i < 19; i++) {
      expectRawError(
        await rawRequest(gw, '/hooks/wake', [client, `Authorization: Bearer ${WRONG}`]),
        401,
        'unauthorized',
      );
    }
    const ok = await rawRequest(gw, '/hooks/wake', [client, `Authorization: Bearer ${HOOK_TOKEN}`]);
    expect(ok.status, ok.body).toBe(200);

    for (let i = 0; i < 20; i++) {
      await rawRequest(gw, '/hooks/wake', [client, `Authorization: Bearer ${WRONG}`]);
    }
    expectRawError(await rawRequest(gw, '/hooks/wake', [client, ...twice]), 429, 'rate_limited');
  });
});
