/**
 * The admin routes' query parameters, checked by their zod schemas
 * (src/server/validation.ts): a refused value is 400 invalid_payload naming
 * the field, in the gateway's JSON error shape, on every route that takes one; and
 * authentication still comes before any parameter is looked at.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, expectInvalidPayload } from '../ingress/support.js';

const SESSION = 'hook:admin-params';

describe('admin API parameters', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
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

  it('checks the token before the parameters', async () => {
    const answer = await readAnswer(await fetch(`${gw.url}/api/sessions/${SESSION}/events?limit=0`));
    expectError(answer, 401, 'unauthorized');
  });
});
