/**
 * The admin routes' query parameters, checked by their zod schemas
 * (src/server/validation.ts): a refused value is 400 invalid_payload naming
 * the field, in the gateway's JSON error shape, on every route that takes one — the
 * bulk retry's JSON body too; and authentication still comes before any parameter is
 * looked at.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, expectInvalidPayload } from '../ingress/support.js';

const SESSION = 'hook:admin-params';

describe('admin API parameters', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({}, { inject: true });
  });
  afterAll(() => gw.stop());

  it.each(['events', 'transcript', 'heartbeats'])(
    'refuses ?limit=0 on %s with invalid_payload naming limit',
    async (route) => {
      expectInvalidPayload(await gw.admin(`/api/sessions/${SESSION}/${route}?limit=0`), 'limit');
    },
  );

  it('refuses a repeated ?limit= and a repeated ?after= rather than guessing', async () => {
    expectInvalidPayload(await gw.admin(`/api/sessions/${SESSION}/events?limit=1&limit=2`), 'limit');
    expectInvalidPayload(await gw.admin(`/api/sessions/${SESSION}/events?after=a&after=b`), 'after');
  });

  it('takes the default and an in-range limit', async () => {
    for (const query of ['', '?limit=10000', '?limit=1']) {
      const answer = await gw.admin(`/api/sessions/${SESSION}/transcript${query}`);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual({ messages: [] });
    }
  });

  const bulkRetry = async (body: string | undefined, token = ADMIN_TOKEN) =>
    readAnswer(
      await fetch(`${gw.url}/api/runs/retry`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body,
      }),
    );

  it.each([
    ['{}', 'status'],
    ['{"status":"succeeded"}', 'status'],
    ['{"status":"failed","limit":0}', 'limit'],
    ['{"status":"failed","limit":1001}', 'limit'],
    ['{"status":"failed","limit":1.5}', 'limit'],
    ['{"status":"failed","limit":"10"}', 'limit'],
    ['{"status":"failed","since":"yesterday"}', 'since'],
    ['{"status":"failed","since":"2026-11-28T15:00:00"}', 'since'],
    ['{"status":"failed","until":12}', 'until'],
    ['{"status":"failed","since":"2026-11-28T15:00:00Z","until":"2026-11-28T14:00:00Z"}', 'until'],
    ['{"status":"failed","source":""}', 'source'],
    ['{"status":"failed","dryRun":"yes"}', 'dryRun'],
    ['{"status":"failed","dry_run":true}', 'dry_run'],
  ])('refuses the bulk retry body %s with invalid_payload naming %s', async (body, field) => {
    expectInvalidPayload(await bulkRetry(body), field);
  });

  it('a bulk retry without a body names status; a body that is not a JSON object is invalid_json', async () => {
    expectInvalidPayload(await bulkRetry(undefined), 'status');
    expectError(await bulkRetry('[1]'), 400, 'invalid_json');
    expectError(await bulkRetry('{"status":'), 400, 'invalid_json');
    const ok = await bulkRetry('{"status":"timed_out","since":"2026-11-28T15:00:00+01:00","dryRun":true}');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ ok: true, matched: 0, retried: [] });
  });

  it('checks the token before the parameters', async () => {
    expectError(await bulkRetry('{"status":"nope"}', 'wrong'), 401, 'unauthorized');
    const answer = await readAnswer(await fetch(`${gw.url}/api/sessions/${SESSION}/events?limit=0`));
    expectError(answer, 401, 'unauthorized');
  });
});
