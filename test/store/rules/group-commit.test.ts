import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../../src/store/rules/group-commit.js';

class Wrapped extends Error {}
const wrapError = (error: unknown) => new Wrapped(String((error as Error).message));

describe('GroupCommit', () => {
  it('commits what arrives in one event-loop turn as one batch, and one batch at a time', async () => {
    const batches: number[][] = [];
    let open = 0;
    let maxOpen = 0;
    const group = new GroupCommit<number, number>(
      async (items) => {
        open++;
        maxOpen = Math.max(maxOpen, open);
        batches.push([...items]);
        await new Promise((resolve) => setTimeout(resolve, 5));
        open--;
        return items.map((n) => n * 10);
      },
      { wrapError },
    );
    const first = [1, 2, 3].map((n) => group.submit(n));
    await new Promise((resolve) => setImmediate(resolve));
    // Submitted while the first batch is open: they wait and go together next.
    const second = [4, 5].map((n) => group.submit(n));
    expect(await Promise.all([...first, ...second])).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(maxOpen).toBe(1);
  });

  it('replays a failed batch one item at a time, so one bad item fails alone', async () => {
    const failures: unknown[] = [];
    const group = new GroupCommit<number, number>(
      (items) => {
        if (items.includes(2)) throw new Error('bad item');
        return items.map((n) => n + 1);
      },
      { wrapError, onFailure: (error) => failures.push(error) },
    );
    const results = await Promise.allSettled([1, 2, 3].map((n) => group.submit(n)));
    expect(results[0]).toEqual({ status: 'fulfilled', value: 2 });
    expect(results[1]?.status).toBe('rejected');
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(Wrapped);
    expect(results[2]).toEqual({ status: 'fulfilled', value: 4 });
    // The batch, then the bad item alone.
    expect(failures).toHaveLength(2);
  });

  it('drain waits for everything submitted, the batch in flight included', async () => {
    let committed = 0;
    const group = new GroupCommit<number, void>(
      async (items) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        committed += items.length;
        return items.map(() => undefined);
      },
      { wrapError },
    );
    void group.submit(1);
    void group.submit(2);
    await group.drain();
    expect(committed).toBe(2);
  });
});
