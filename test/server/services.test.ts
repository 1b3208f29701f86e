/**
 * ServiceList: start order, reverse stop order, rollback when a part fails to
 * start, optional parts, and a stop that goes on past a part failing to stop.
 */
import { describe, expect, it } from 'vitest';
import { type Service, ServiceList } from '../../src/server/services.js';

/** A service that records its starts and stops (with the grace) in `events`. */
function recorded(events: string[], name: string, fail: { start?: boolean; stop?: boolean } = {}): Service {
  return {
    name,
    start: async () => {
      events.push(`start ${name}`);
      if (fail.start) throw new Error(`${name} cannot start`);
    },
    stop: async (graceMs: number) => {
      events.push(`stop ${name} ${graceMs}`);
      if (fail.stop) throw new Error(`${name} cannot stop`);
    },
  };
}

describe('ServiceList', () => {
  it('starts in order and stops in reverse order with the grace given', async () => {
    const events: string[] = [];
    const list = new ServiceList();
    for (const name of ['store', 'listener', 'worker']) await list.start(recorded(events, name));
    expect(list.names).toEqual(['store', 'listener', 'worker']);
    await list.stop(500);
    expect(events).toEqual([
      'start store',
      'start listener',
      'start worker',
      'stop worker 500',
      'stop listener 500',
      'stop store 500',
    ]);
  });

  it('stops once however often stop is called', async () => {
    const events: string[] = [];
    const list = new ServiceList();
    await list.start(recorded(events, 'store'));
    await Promise.all([list.stop(1), list.stop(2)]);
    await list.stop(3);
    expect(events).toEqual(['start store', 'stop store 1']);
  });

  it('closes what was opened when a part fails to start after listening, and rethrows', async () => {
    const events: string[] = [];
    const list = new ServiceList();
    await list.start(recorded(events, 'store'));
    await list.start(recorded(events, 'listener'));
    await expect(list.start(recorded(events, 'worker', { start: true }))).rejects.toThrow(
      'worker cannot start',
    );
    // The part that failed is not stopped (it never started); the others are, at once.
    expect(events).toEqual([
      'start store',
      'start listener',
      'start worker',
      'stop listener 0',
      'stop store 0',
    ]);
    expect(list.names).toEqual([]);
    await expect(list.start(recorded(events, 'late'))).rejects.toThrow(/stopping/);
  });

  it('leaves the others running when an optional part fails to start', async () => {
    const events: string[] = [];
    const list = new ServiceList();
    await list.start(recorded(events, 'listener'));
    await expect(list.start(recorded(events, 'gmail', { start: true }), { optional: true })).rejects.toThrow(
      'gmail cannot start',
    );
    expect(list.names).toEqual(['listener']);
    await list.stop(10);
    expect(events).toEqual(['start listener', 'start gmail', 'stop listener 10']);
  });

  it('stops the rest when one part fails to stop, then throws the first error', async () => {
    const events: string[] = [];
    const logged: unknown[] = [];
    const log = { error: (fields: unknown) => logged.push(fields) } as never;
    const list = new ServiceList(log);
    await list.start(recorded(events, 'store'));
    await list.start(recorded(events, 'worker', { stop: true }));
    await list.start(recorded(events, 'watcher'));
    await expect(list.stop(0)).rejects.toThrow('worker cannot stop');
    expect(events.slice(3)).toEqual(['stop watcher 0', 'stop worker 0', 'stop store 0']);
    expect(logged).toHaveLength(1);
  });

  it('open returns the resource and closes it on stop', async () => {
    const list = new ServiceList();
    const closed: string[] = [];
    const resource = await list.open(
      'store',
      async () => ({ id: 'db' }),
      (value) => closed.push(value.id),
    );
    expect(resource).toEqual({ id: 'db' });
    await list.stop(0);
    expect(closed).toEqual(['db']);
  });
});
