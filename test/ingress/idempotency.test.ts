/**
 * Idempotency (docs/endpoints.md, "Idempotency"): `Idempotency-Key` (else `webhook-id`)
 * repeating an earlier request on the same hook path gets the first answer
 * again and does no new work; a different body under the key is 409; rejected
 * requests do not consume the key; the record survives a restart.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { expectError, expectInvalidPayload, getRun, listEvents } from './support.js';

let counter = 0;
const freshKey = (label: string) => `${label}-${Date.now()}-${++counter}`;

describe('idempotency', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ hooks: { defaultSessionKey: 'hook:idem' } }, { inject: true });
  });
  afterAll(() => gw.stop());

  it('replays the first agent answer for the same Idempotency-Key and body, without a new run', async () => {
    const key = freshKey('agent');
    const payload = { message: 'deploy #1 finished' };
    const first = await gw.hook('agent', payload, { 'idempotency-key': key });
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const again = await gw.hook('agent', payload, { 'idempotency-key': key });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);

    const third = await gw.hook('agent', payload, { 'idempotency-key': key });
    expect(third.body.runId).toBe(first.body.runId);

    // The same body without a key is new work: a different run.
    const unkeyed = await gw.hook('agent', payload);
    expect(unkeyed.status).toBe(202);
    expect(unkeyed.body.runId).not.toBe(first.body.runId);
    expect((await getRun(gw, first.body.runId)).status).toBe('queued');
  });

  it('replays the first wake answer (queued, same eventId) and stores one event', async () => {
    const key = freshKey('wake');
    const text = `idempotent wake ${key}`;
    const first = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    expect(first.body.eventOutcome).toBe('queued');
    // Another event in between: without idempotency a repeat would be a new queued event.
    const between = await gw.hook('wake', { text: `${text} (other)` });
    expect(between.body.eventOutcome).toBe('queued');

    const again = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');

    const events = await listEvents(gw);
    expect(events.filter((e) => e.text === text)).toHaveLength(1);
  });

  it('treats webhook-id the same way', async () => {
    const id = freshKey('msg');
    const payload = { message: 'standard webhooks delivery' };
    const first = await gw.hook('agent', payload, { 'webhook-id': id });
    expect(first.status).toBe(202);
    const again = await gw.hook('agent', payload, { 'webhook-id': id });
    expect(again.status).toBe(202);
    expect(again.body.runId).toBe(first.body.runId);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const conflict = await gw.hook('agent', { message: 'other body' }, { 'webhook-id': id });
    expectError(conflict, 409, 'idempotency_conflict');
  });

  it('uses Idempotency-Key over webhook-id when both are present', async () => {
    const key = freshKey('both');
    const payload = { message: 'both headers' };
    const first = await gw.hook('agent', payload, { 'idempotency-key': key, 'webhook-id': freshKey('w1') });
    const again = await gw.hook('agent', payload, { 'idempotency-key': key, 'webhook-id': freshKey('w2') });
    expect(again.body.runId).toBe(first.body.runId);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('answers 409 idempotency_conflict for the same key with a different body, and does no work', async () => {
    const key = freshKey('conflict');
    const text = `conflict original ${key}`;
    const first = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    const conflict = await gw.hook('wake', { text: `${text} changed` }, { 'idempotency-key': key });
    expectError(conflict, 409, 'idempotency_conflict');
    const events = await listEvents(gw);
    expect(events.map((e) => e.text)).not.toContain(`${text} changed`);
    // The original still replays.
    const again = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expect(again.body.eventId).toBe(first.body.eventId);
  });

  it('keeps keys independent per hook path (wake vs agent)', async () => {
    const key = freshKey('shared');
    const wake = await gw.hook('wake', { text: `shared key ${key}` }, { 'idempotency-key': key });
    expect(wake.status).toBe(200);
    const agent = await gw.hook('agent', { message: `shared key ${key}` }, { 'idempotency-key': key });
    expect(agent.status).toBe(202);
    expect(agent.headers.get('idempotent-replayed')).toBeNull();
    expect(typeof agent.body.runId).toBe('string');
  });

  it('treats keys as exact strings (different case is a different key)', async () => {
    const key = freshKey('Case');
    const a = await gw.hook('agent', { message: 'case a' }, { 'idempotency-key': key });
    const b = await gw.hook('agent', { message: 'case b' }, { 'idempotency-key': key.toLowerCase() });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.runId).not.toBe(a.body.runId);
  });

  it('does not let a rejected request (400) consume the key', async () => {
    const key = freshKey('rejected');
    const bad = await gw.hook('agent', { message: '' }, { 'idempotency-key': key });
    expectInvalidPayload(bad, 'message');
    const badPolicy = await gw.hook(
      'agent',
      { message: 'x', sessionKey: 'hook:no' },
      { 'idempotency-key': key },
    );
    expectError(badPolicy, 400, 'session_key_not_allowed');

    const good = await gw.hook('agent', { message: 'now valid' }, { 'idempotency-key': key });
    expect(good.status).toBe(202);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
    const again = await gw.hook('agent', { message: 'now valid' }, { 'idempotency-key': key });
    expect(again.body.runId).toBe(good.body.runId);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('does not let an unauthorized request consume the key', async () => {
    const key = freshKey('unauth');
    const denied = await gw.hook(
      'agent',
      { message: 'm' },
      { 'idempotency-key': key, authorization: 'Bearer wrong' },
    );
    expectError(denied, 401, 'unauthorized');
    const ok = await gw.hook('agent', { message: 'm' }, { 'idempotency-key': key });
    expect(ok.status).toBe(202);
    expect(ok.headers.get('idempotent-replayed')).toBeNull();
  });

  it('commits concurrent duplicates once', async () => {
    const key = freshKey('race');
    const text = `concurrent ${key}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        gw.hook('wake', { text, mode: 'next-heartbeat' }, { 'idempotency-key': key }),
      ),
    );
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(new Set(answers.map((a) => a.body.eventId)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(7);
    const events = await listEvents(gw);
    expect(events.filter((e) => e.text === text)).toHaveLength(1);

    const runKey = freshKey('race-run');
    const runs = await Promise.all(
      Array.from({ length: 8 }, () =>
        gw.hook('agent', { message: 'concurrent run' }, { 'idempotency-key': runKey }),
      ),
    );
    expect(new Set(runs.map((a) => a.body.runId)).size).toBe(1);
  });

  it('rejects an over-long key as invalid_payload', async () => {
    const answer = await gw.hook('agent', { message: 'm' }, { 'idempotency-key': 'k'.repeat(1000) });
    expectError(answer, 400, 'invalid_payload');
  });
});

describe('idempotency across a restart', () => {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('replays the first answer after the gateway restarts on the same store', async () => {
    const key = freshKey('restart');
    let gw = await startTestGateway({}, { inject: true, dir });
    let first: Awaited<ReturnType<TestGateway['hook']>>;
    try {
      first = await gw.hook('agent', { message: 'survives restart' }, { 'idempotency-key': key });
      expect(first.status).toBe(202);
    } finally {
      await gw.stop();
    }
    gw = await startTestGateway({}, { inject: true, dir });
    try {
      const again = await gw.hook('agent', { message: 'survives restart' }, { 'idempotency-key': key });
      expect(again.status).toBe(202);
      expect(again.body.runId).toBe(first.body.runId);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const conflict = await gw.hook('agent', { message: 'different' }, { 'idempotency-key': key });
      expectError(conflict, 409, 'idempotency_conflict');
    } finally {
      await gw.stop();
    }
  });
});
