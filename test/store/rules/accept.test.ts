import { describe, expect, it } from 'vitest';
import {
  EVENT_COLUMNS,
  eventValues,
  type NewestPending,
  type PendingAccept,
  planAccept,
  RUN_COLUMNS,
  repeatOf,
  replayOrConflict,
  runValues,
} from '../../../src/store/rules/accept.js';
import type { Committed, NewEvent, NewRun } from '../../../src/store/types.js';

const wake = (id: string, text: string, sessionKey = 'agent:main:main'): NewEvent => ({
  id,
  sessionKey,
  text,
  source: 'hook:wake',
  wakeMode: 'now',
  ts: 1,
});

const run = (over: Partial<NewRun> = {}): NewRun => ({
  id: 'run_1',
  agentId: 'main',
  sessionKey: 'hook:x',
  mainSessionKey: 'agent:main:main',
  name: null,
  message: 'hi',
  model: null,
  thinking: null,
  timeoutSeconds: 60,
  wakeMode: 'now',
  deliver: true,
  channel: 'slack',
  to: 'C1',
  allowUnsafeExternalContent: false,
  source: 'hook:x',
  createdAt: 7,
  ...over,
});

const accept = (actions: PendingAccept['actions']): PendingAccept => ({
  actions,
  render: (committed: Committed[]) => ({ status: 202, body: JSON.stringify(committed) }),
  idempotency: undefined,
});

describe('replayOrConflict', () => {
  const earlier = { body_hash: 'h1', status: 202, body: '{"ok":true}' };
  it('replays the answer for the same body, and is a conflict for another', () => {
    expect(replayOrConflict(earlier, 'h1')).toEqual({
      kind: 'replay',
      answer: { status: 202, body: '{"ok":true}' },
    });
    expect(replayOrConflict(earlier, 'h2')).toEqual({ kind: 'conflict' });
  });

  it('a repeat in the same batch replays its first use, unless the body differs or the first conflicted', () => {
    const first = { kind: 'committed' as const, committed: [], answer: { status: 200, body: 'x' } };
    expect(repeatOf(first, true)).toEqual({ kind: 'replay', answer: first.answer });
    expect(repeatOf(first, false)).toEqual({ kind: 'conflict' });
    expect(repeatOf({ kind: 'conflict' }, true)).toEqual({ kind: 'conflict' });
  });
});

describe('planAccept', () => {
  it('queues a wake, and coalesces the next one with the same text into it', () => {
    const newest = new Map<string, NewestPending>();
    const plan = planAccept(accept([{ kind: 'wake', event: wake('evt_1', 'ping') }]), newest);
    expect(plan.events.map((e) => e.id)).toEqual(['evt_1']);
    expect(plan.result.committed).toEqual([{ kind: 'wake', eventId: 'evt_1', outcome: 'queued' }]);
    const again = planAccept(accept([{ kind: 'wake', event: wake('evt_2', 'ping') }]), newest);
    expect(again.events).toEqual([]);
    expect(again.result.committed).toEqual([{ kind: 'wake', eventId: 'evt_1', outcome: 'coalesced' }]);
  });

  it('coalesces into what the session already has pending, and queues another text', () => {
    const newest = new Map([['agent:main:main', { id: 'evt_0', text: 'ping' }]]);
    const plan = planAccept(
      accept([
        { kind: 'wake', event: wake('evt_1', 'ping') },
        { kind: 'wake', event: wake('evt_2', 'pong') },
        { kind: 'wake', event: wake('evt_3', 'ping', 'agent:other:main') },
      ]),
      newest,
    );
    expect(plan.result.committed).toEqual([
      { kind: 'wake', eventId: 'evt_0', outcome: 'coalesced' },
      { kind: 'wake', eventId: 'evt_2', outcome: 'queued' },
      { kind: 'wake', eventId: 'evt_3', outcome: 'queued' },
    ]);
    expect(newest.get('agent:main:main')).toEqual({ id: 'evt_2', text: 'pong' });
  });

  it('takes the runs in order, and renders the answer from what was committed', () => {
    const item = accept([
      { kind: 'agent', run: run({ id: 'run_1' }) },
      { kind: 'agent', run: run({ id: 'run_2' }) },
    ]);
    const plan = planAccept(item, new Map());
    expect(plan.runs.map((r) => r.id)).toEqual(['run_1', 'run_2']);
    expect(plan.result).toEqual({
      kind: 'committed',
      committed: [
        { kind: 'agent', runId: 'run_1' },
        { kind: 'agent', runId: 'run_2' },
      ],
      answer: { status: 202, body: JSON.stringify(plan.result.committed) },
    });
  });
});

describe('row values', () => {
  const column = (columns: string, values: unknown[], name: string) =>
    values[
      columns
        .split(',')
        .map((c) => c.trim())
        .indexOf(name)
    ];

  it("a run to deliver starts with its delivery pending to the route it asked for; flags as the engine's", () => {
    const values = runValues(run(), (b) => (b ? 1 : 0));
    expect(values).toHaveLength(RUN_COLUMNS.split(',').length);
    expect(column(RUN_COLUMNS, values, 'delivery_status')).toBe('pending');
    expect(column(RUN_COLUMNS, values, 'delivery_channel')).toBe('slack');
    expect(column(RUN_COLUMNS, values, 'delivery_to')).toBe('C1');
    expect(column(RUN_COLUMNS, values, 'deliver')).toBe(1);
    expect(column(RUN_COLUMNS, values, 'stream')).toBe(0);
  });

  it('a run not to deliver starts with no delivery record', () => {
    const values = runValues(run({ deliver: false }), (b) => b);
    expect(column(RUN_COLUMNS, values, 'delivery_status')).toBe('none');
    expect(column(RUN_COLUMNS, values, 'delivery_channel')).toBeNull();
    expect(column(RUN_COLUMNS, values, 'deliver')).toBe(false);
  });

  it("an event's values follow its columns", () => {
    const values = eventValues({ ...wake('evt_1', 'ping'), tokenId: 'tok_1' });
    expect(values).toHaveLength(EVENT_COLUMNS.split(',').length);
    expect(column(EVENT_COLUMNS, values, 'token_id')).toBe('tok_1');
    expect(column(EVENT_COLUMNS, values, 'trace_parent')).toBeNull();
  });
});
