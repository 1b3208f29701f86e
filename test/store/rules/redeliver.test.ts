import { describe, expect, it } from 'vitest';
import { mayRedeliver, planRedelivery } from '../../../src/store/rules/redeliver.js';

const run = { reply: 'the answer', deliver: 1, main_session_key: 'agent:main:main' };
const last = {
  channel: 'last',
  recipient: null,
  resolved_channel: 'slack',
  resolved_to: 'C1',
  status: 'delivered',
};

describe('planRedelivery', () => {
  it('an unknown run is not found', () => {
    expect(planRedelivery('run_1', undefined, undefined, 5)).toEqual({ result: 'not_found' });
  });

  it('a run with no reply, or not to deliver, or never delivered, has nothing to deliver', () => {
    expect(mayRedeliver({ ...run, reply: null })).toBe(false);
    expect(mayRedeliver({ ...run, deliver: false })).toBe(false);
    expect(mayRedeliver({ ...run, deliver: 0 })).toBe(false);
    expect(planRedelivery('run_1', { ...run, reply: null }, last, 5).result).toBe('nothing_to_deliver');
    expect(planRedelivery('run_1', run, undefined, 5).result).toBe('nothing_to_deliver');
  });

  it('a delivery still pending is not doubled', () => {
    expect(planRedelivery('run_1', run, { ...last, status: 'pending' }, 5).result).toBe('delivery_pending');
  });

  it('goes again by the route the last delivery fixed', () => {
    expect(mayRedeliver({ ...run, deliver: true })).toBe(true);
    const plan = planRedelivery('run_1', run, last, 5);
    expect(plan).toMatchObject({ result: 'enqueued', channel: 'slack', to: 'C1' });
    if (plan.result !== 'enqueued') throw new Error('not enqueued');
    expect(plan.delivery.slice(1)).toEqual([
      'run',
      'run_1',
      'agent:main:main',
      'slack',
      'C1',
      'the answer',
      'slack',
      'C1',
      5,
      5,
      5,
    ]);
    expect(plan.delivery[0]).toMatch(/^dlv_/);
  });

  it('else by the route it asked for', () => {
    const unresolved = {
      ...last,
      channel: 'telegram',
      recipient: '42',
      resolved_channel: null,
      resolved_to: null,
    };
    expect(planRedelivery('run_1', run, unresolved, 5)).toMatchObject({ channel: 'telegram', to: '42' });
  });
});
