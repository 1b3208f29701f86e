import { describe, expect, it } from 'vitest';
import { heartbeatValues, planHeartbeat } from '../../../src/store/rules/heartbeat.js';
import type { HeartbeatRecord } from '../../../src/store/types.js';

const record = (over: Partial<HeartbeatRecord> = {}): HeartbeatRecord => ({
  id: 'hb_1',
  sessionKey: 'agent:main:main',
  startedAt: 1,
  finishedAt: 2,
  status: 'succeeded',
  eventIds: ['evt_1', 'evt_2'],
  reply: 'all good',
  error: null,
  transcript: [{ role: 'assistant', content: 'all good' }],
  delivery: { status: 'pending', channel: null, to: null, reason: null },
  traceParent: '00-abc-def-01',
  ...over,
});

describe('planHeartbeat', () => {
  it('a succeeded heartbeat consumes its events, appends its turn and delivers its reply to the last route', () => {
    expect(planHeartbeat(record())).toEqual({
      consumed: ['evt_1', 'evt_2'],
      transcript: [
        { role: 'assistant', content: 'all good', sessionKey: 'agent:main:main', runId: null, ts: 2 },
      ],
      delivery: {
        kind: 'heartbeat',
        refId: 'hb_1',
        mainSessionKey: 'agent:main:main',
        channel: 'last',
        to: null,
        text: 'all good',
        traceParent: '00-abc-def-01',
      },
    });
  });

  it('a reply not to deliver (or none) puts nothing in the outbox', () => {
    const none = { status: 'none' as const, channel: null, to: null, reason: null };
    expect(planHeartbeat(record({ delivery: none }))?.delivery).toBeNull();
    expect(planHeartbeat(record({ reply: null }))?.delivery).toBeNull();
  });

  it('a failed heartbeat writes its row only: its events stay pending', () => {
    expect(planHeartbeat(record({ status: 'failed', error: 'boom' }))).toBeNull();
  });

  it("the row's values count the events and carry the delivery record", () => {
    expect(heartbeatValues(record())).toEqual([
      'hb_1',
      'agent:main:main',
      1,
      2,
      'succeeded',
      2,
      'all good',
      null,
      'pending',
      null,
      null,
      null,
      // No usage: no model, zero tokens, no cost (docs/usage.md).
      null,
      0,
      0,
      0,
      0,
      null,
    ]);
  });
});
