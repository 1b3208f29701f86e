import { describe, expect, it } from 'vitest';
import { planDeliveryEnd, retryRecord } from '../../../src/store/rules/delivery-end.js';
import type { DeliveryRecord, NewAlert, OutboxItem } from '../../../src/store/types.js';

const item = (over: Partial<OutboxItem> = {}): OutboxItem => ({
  id: 'dlv_1',
  kind: 'run',
  refId: 'run_1',
  mainSessionKey: 'agent:main:main',
  channel: 'last',
  to: null,
  text: 'hello',
  resolved: null,
  partsSent: 0,
  attempts: 0,
  nextAttemptAt: 0,
  traceParent: null,
  ...over,
});
const delivered: DeliveryRecord = { status: 'delivered', channel: 'slack', to: 'C1', reason: null };
const failed: DeliveryRecord = { status: 'failed', channel: 'slack', to: 'C1', reason: 'boom' };
const alert = { refId: 'run_1', channel: 'slack', to: 'ops', text: 'failed' } as NewAlert;

describe('planDeliveryEnd', () => {
  it('a delivered run reply keeps its record and route, and settles the run', () => {
    expect(planDeliveryEnd(item(), delivered, alert)).toEqual({
      record: delivered,
      route: { channel: 'slack', to: 'C1' },
      settlesRun: true,
      alert: null,
    });
  });

  it('a failed heartbeat reply keeps its record, raises its alert, and settles no run', () => {
    expect(planDeliveryEnd(item({ kind: 'heartbeat' }), failed, alert)).toEqual({
      record: failed,
      route: null,
      settlesRun: false,
      alert,
    });
  });

  it('a delivery with no recipient found keeps no route', () => {
    const skipped: DeliveryRecord = { status: 'skipped', channel: null, to: null, reason: 'no route' };
    expect(planDeliveryEnd(item(), skipped).route).toBeNull();
  });

  it('an alert message writes nothing else, and its failure raises no alert', () => {
    expect(planDeliveryEnd(item({ kind: 'alert' }), failed, alert)).toEqual({
      record: null,
      route: null,
      settlesRun: false,
      alert: null,
    });
  });
});

describe('retryRecord', () => {
  it('is pending on the route the item is going by, with the attempt it failed', () => {
    expect(retryRecord(item({ resolved: { channel: 'slack', to: 'C1' } }), 2, 'timeout')).toEqual({
      status: 'pending',
      channel: 'slack',
      to: 'C1',
      reason: 'attempt 2 failed (timeout); retrying',
    });
    expect(retryRecord(item({ channel: 'last', to: null }), 1, 'x')).toMatchObject({
      channel: 'last',
      to: null,
    });
  });

  it('is none for an alert message', () => {
    expect(retryRecord(item({ kind: 'alert' }), 1, 'x')).toBeNull();
  });
});
