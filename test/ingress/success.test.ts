/**
 * Successful answers (docs/endpoints.md) and what they leave in the store,
 * read back through the admin API (docs/operating.md, "Admin API").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, expectInvalidPayload, getRun, listEvents, MAIN_SESSION } from './support.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

describe('wake answers', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({}, { inject: true });
  });
  afterAll(() => gw.stop());

  it('answers 200 with mode "now" by default and stores a pending event in the main session', async () => {
    const before = Date.now();
    const answer = await gw.hook('wake', { text: 'deploy finished' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.body).toEqual({
      ok: true,
      mode: 'now',
      eventId: expect.any(String),
      eventOutcome: 'queued',
    });
    expect(answer.body.eventId.length).toBeGreaterThan(0);

    const events = await listEvents(gw);
    const event = events.find((e) => e.id === answer.body.eventId);
    expect(event).toEqual({
      id: answer.body.eventId,
      ts: expect.stringMatching(ISO),
      text: 'deploy finished',
      source: expect.any(String),
      status: 'pending',
      // The hook token's id once the ingress records it (docs/senders.md); null before.
      tokenId: 'default',
    });
    const ts = Date.parse(event?.ts ?? '');
    expect(ts).toBeGreaterThanOrEqual(before - 1000);
    expect(ts).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('echoes mode "next-heartbeat"', async () => {
    const answer = await gw.hook('wake', { text: 'nightly report ready', mode: 'next-heartbeat' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      ok: true,
      mode: 'next-heartbeat',
      eventId: expect.any(String),
      eventOutcome: 'queued',
    });
  });

  it('echoes an explicit mode "now"', async () => {
    const answer = await gw.hook('wake', { text: 'explicit now', mode: 'now' });
    expect(answer.status).toBe(200);
    expect(answer.body.mode).toBe('now');
  });

  it('keeps the text exactly as sent (unicode, newlines, surrounding spaces)', async () => {
    const text = '  Ünïcødé ✓ 🚀\nline two\t"quoted" <b>html</b>  ';
    const answer = await gw.hook('wake', { text });
    expect(answer.status).toBe(200);
    const events = await listEvents(gw);
    expect(events.find((e) => e.id === answer.body.eventId)?.text).toBe(text);
  });

  it('gives distinct events distinct ids', async () => {
    const a = await gw.hook('wake', { text: 'distinct A' });
    const b = await gw.hook('wake', { text: 'distinct B' });
    expect(a.body.eventId).not.toBe(b.body.eventId);
  });

  it('coalesces a wake equal to the newest pending event of the main session', async () => {
    const first = await gw.hook('wake', { text: 'disk almost full' });
    expect(first.body.eventOutcome).toBe('queued');
    const second = await gw.hook('wake', { text: 'disk almost full' });
    expect(second.status).toBe(200);
    expect(second.body).toEqual({
      ok: true,
      mode: 'now',
      eventId: first.body.eventId,
      eventOutcome: 'coalesced',
    });
    const third = await gw.hook('wake', { text: 'disk almost full', mode: 'next-heartbeat' });
    expect(third.body).toMatchObject({ eventId: first.body.eventId, eventOutcome: 'coalesced' });

    const events = await listEvents(gw);
    expect(events.filter((e) => e.text === 'disk almost full')).toHaveLength(1);
  });

  it('does not coalesce with an older event once a different one is newer', async () => {
    const a1 = await gw.hook('wake', { text: 'flap: service A down' });
    const b = await gw.hook('wake', { text: 'flap: service B down' });
    const a2 = await gw.hook('wake', { text: 'flap: service A down' });
    expect(b.body.eventOutcome).toBe('queued');
    expect(a2.body.eventOutcome).toBe('queued');
    expect(a2.body.eventId).not.toBe(a1.body.eventId);
    const events = await listEvents(gw);
    expect(events.filter((e) => e.text === 'flap: service A down')).toHaveLength(2);
  });

  it('does not coalesce texts that differ only in case or whitespace', async () => {
    const a = await gw.hook('wake', { text: 'Queue backed up' });
    const b = await gw.hook('wake', { text: 'queue backed up' });
    const c = await gw.hook('wake', { text: 'queue backed up ' });
    expect([a.body.eventOutcome, b.body.eventOutcome, c.body.eventOutcome]).toEqual([
      'queued',
      'queued',
      'queued',
    ]);
    expect(new Set([a.body.eventId, b.body.eventId, c.body.eventId]).size).toBe(3);
  });
});

describe('session events listing (admin API)', () => {
  let gw: TestGateway;
  const ids: string[] = [];
  beforeAll(async () => {
    gw = await startTestGateway({}, { inject: true });
    for (let i = 1; i <= 5; i++) {
      const answer = await gw.hook('wake', { text: `event ${i}` });
      expect(answer.status).toBe(200);
      ids.push(answer.body.eventId);
    }
  });
  afterAll(() => gw.stop());

  it('lists events oldest first', async () => {
    const events = await listEvents(gw);
    expect(events.map((e) => e.text)).toEqual(['event 1', 'event 2', 'event 3', 'event 4', 'event 5']);
    expect(events.map((e) => e.id)).toEqual(ids);
    for (const event of events) expect(event.status).toBe('pending');
  });

  it('limits with ?limit=', async () => {
    const events = await listEvents(gw, MAIN_SESSION, '?limit=2');
    expect(events.map((e) => e.id)).toEqual(ids.slice(0, 2));
  });

  it('pages with ?after= and ?limit=', async () => {
    const page2 = await listEvents(gw, MAIN_SESSION, `?after=${ids[1]}&limit=2`);
    expect(page2.map((e) => e.id)).toEqual(ids.slice(2, 4));
    const page3 = await listEvents(gw, MAIN_SESSION, `?after=${ids[3]}&limit=2`);
    expect(page3.map((e) => e.id)).toEqual(ids.slice(4));
    const end = await listEvents(gw, MAIN_SESSION, `?after=${ids[4]}`);
    expect(end).toEqual([]);
  });

  it('walks every event exactly once by paging one at a time', async () => {
    const seen: string[] = [];
    let after = '';
    for (;;) {
      const page = await listEvents(gw, MAIN_SESSION, `?limit=1${after ? `&after=${after}` : ''}`);
      if (page.length === 0) break;
      expect(page).toHaveLength(1);
      after = page[0]?.id ?? '';
      seen.push(after);
    }
    expect(seen).toEqual(ids);
  });

  it('answers an empty list for a session without events', async () => {
    expect(await listEvents(gw, 'hook:nothing-here')).toEqual([]);
  });

  it.each(['0', '-1', 'abc', '1.5'])('rejects ?limit=%s with invalid_payload naming limit', async (limit) => {
    const answer = await gw.admin(`/api/sessions/${MAIN_SESSION}/events?limit=${limit}`);
    expectInvalidPayload(answer, 'limit');
  });

  it('rejects ?after= naming no event of the session', async () => {
    const answer = await gw.admin(`/api/sessions/${MAIN_SESSION}/events?after=evt_unknown`);
    expectInvalidPayload(answer, 'after');
  });

  it('answers 404 for an unknown run id', async () => {
    const answer = await gw.admin('/api/runs/run_does_not_exist');
    expectError(answer, 404, 'not_found');
  });
});

describe('agent answers and stored runs', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ channels: { telegram: { botToken: '123:abc' } } }, { inject: true });
  });
  afterAll(() => gw.stop());

  it('answers 202 with a runId and stores a queued run', async () => {
    const before = Date.now();
    const answer = await gw.hook('agent', { message: 'summarise the incident' });
    expect(answer.status).toBe(202);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.body).toEqual({ ok: true, runId: expect.any(String) });

    const run = await getRun(gw, answer.body.runId);
    expect(run).toMatchObject({
      runId: answer.body.runId,
      status: 'queued',
      agentId: 'main',
      sessionKey: expect.stringMatching(new RegExp(`^hook:${UUID.source}$`)),
      createdAt: expect.stringMatching(ISO),
      startedAt: null,
      finishedAt: null,
      notBefore: null,
      reply: null,
      error: null,
      delivery: { status: 'pending', channel: 'last', to: null, reason: null },
      // The operator's view adds the run's inputs (the run list's fields and the message).
      source: 'hook:agent',
      name: null,
      retryOf: null,
      message: 'summarise the incident',
      tokenId: 'default',
      attachments: [],
      steps: 0,
      waitingFor: null,
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
    });
    expect(Object.keys(run).sort()).toEqual(
      [
        'runId',
        'status',
        'agentId',
        'sessionKey',
        'model',
        'createdAt',
        'startedAt',
        'finishedAt',
        'notBefore',
        'reply',
        'error',
        'delivery',
        'callback',
        'tokenId',
        'attachments',
        'steps',
        'waitingFor',
        'usage',
        'source',
        'name',
        'retryOf',
        'message',
      ].sort(),
    );
    // No override: the run reports the default model or leaves it to the agent's default.
    expect([null, 'echo/echo']).toContain(run.model);
    expect(Date.parse(run.createdAt)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('stores the model override, channel and recipient', async () => {
    const answer = await gw.hook('agent', {
      message: 'tell the on-call',
      name: 'PagerDuty',
      model: 'echo/fast',
      thinking: 'low',
      timeoutSeconds: 120,
      wakeMode: 'next-heartbeat',
      deliver: true,
      channel: 'telegram',
      to: '-100123456',
    });
    expect(answer.status, answer.text).toBe(202);
    const run = await getRun(gw, answer.body.runId);
    expect(run).toMatchObject({
      status: 'queued',
      agentId: 'main',
      model: 'echo/fast',
      delivery: { status: 'pending', channel: 'telegram', to: '-100123456' },
    });
  });

  it('stores delivery status "none" with deliver false', async () => {
    const answer = await gw.hook('agent', {
      message: 'quiet run',
      deliver: false,
      channel: 'telegram',
      to: '42',
    });
    expect(answer.status, answer.text).toBe(202);
    const run = await getRun(gw, answer.body.runId);
    expect(run.status).toBe('queued');
    expect(run.delivery.status).toBe('none');
  });

  it('gives every request its own run and, without a default key, its own hook:<uuid> session', async () => {
    const a = await gw.hook('agent', { message: 'same message' });
    const b = await gw.hook('agent', { message: 'same message' });
    expect(a.body.runId).not.toBe(b.body.runId);
    const [runA, runB] = await Promise.all([getRun(gw, a.body.runId), getRun(gw, b.body.runId)]);
    expect(runA.sessionKey).toMatch(new RegExp(`^hook:${UUID.source}$`));
    expect(runB.sessionKey).toMatch(new RegExp(`^hook:${UUID.source}$`));
    expect(runA.sessionKey).not.toBe(runB.sessionKey);
  });
});
