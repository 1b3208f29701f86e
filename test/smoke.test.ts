import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

describe('smoke', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it('accepts a wake and shows it as a pending event of the main session', async () => {
    const answer = await gw.hook('wake', { text: 'build failed' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ ok: true, mode: 'now', eventOutcome: 'queued' });
    const events = await gw.admin('/api/sessions/agent:main:main/events');
    expect(events.body.events).toEqual([
      expect.objectContaining({ id: answer.body.eventId, text: 'build failed', status: 'pending' }),
    ]);
  });
});
