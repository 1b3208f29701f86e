/**
 * Transform worker pools (transform-pool.ts) against real runaway modules: a
 * synchronous loop and an async one are stopped at their deadline, a crash or a
 * heap bomb costs only its own call, calls queued behind a stuck worker are
 * still served, the environment is empty, and retire/terminate end every worker.
 * Time bounds are short (injected limits), so nothing waits the real 5 s.
 */
import { existsSync, mkdtempSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  loadTransform,
  TransformError,
  type TransformInput,
  type TransformLimits,
  type TransformPool,
  TransformTimeoutError,
} from '../../src/mappings/transforms.js';
import { sleep, waitFor } from '../helpers/wait.js';

let root: string;
const pools: TransformPool[] = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'agentgate-isolation-'));
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.terminate()));
  rmSync(root, { recursive: true, force: true });
});

const input = (payload: Record<string, unknown>): TransformInput => ({
  payload,
  headers: {},
  query: {},
  path: 'test',
  url: '/hooks/test',
});

/**
 * One module for every behaviour, chosen by `payload.do`; `payload.file` names a
 * file the transform may write to, so the test can see what it did and when.
 */
const MODULE = `
import { appendFileSync, writeFileSync } from 'node:fs';
export default async ({ payload }) => {
  switch (payload.do) {
    case 'loop':
      if (payload.file) writeFileSync(payload.file, 'started');
      for (;;) {}
    case 'interval':
      setInterval(() => appendFileSync(payload.file, 'x'), 5);
      return new Promise(() => {});
    case 'exit':
      process.exit(1);
    case 'timer-throw':
      setTimeout(() => { throw new Error('thrown in a timer'); }, 1);
      return new Promise(() => {});
    case 'bomb': {
      const hoard = [];
      for (;;) hoard.push({ index: hoard.length, text: 'x'.repeat(64) + hoard.length });
    }
    case 'recurse': {
      const deeper = (n) => deeper(n + 1) + 1;
      return { text: String(deeper(0)) };
    }
    case 'slow':
      await new Promise((resolve) => setTimeout(resolve, payload.ms));
      return { text: 'slow ' + payload.n };
    case 'env':
      return { text: JSON.stringify(process.env) };
    default:
      return { text: 'ok ' + payload.n };
  }
};
`;

async function start(limits: Partial<TransformLimits> = {}, source = MODULE, name = 'runaway.mjs') {
  writeFileSync(join(root, name), source);
  const pool = await loadTransform(
    { transformsRoot: root, transformsDir: root, module: name },
    { timeoutMs: 400, ...limits },
  );
  pools.push(pool);
  return pool;
}

/** Settles to the value or the error, so several calls can be inspected together. */
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (value) => value,
    (error: Error) => error,
  );

describe('runaway transforms are stopped', () => {
  it('a synchronous loop is cut off at its deadline, and its worker replaced', async () => {
    const pool = await start({ timeoutMs: 300 });
    const started = Date.now();
    const error = await outcome(pool.run(input({ do: 'loop' })));
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(TransformTimeoutError);
    expect((error as Error).message).toMatch(/did not finish within 300 ms; its worker was stopped/);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(2000);
    expect(await pool.run(input({ n: 1 }))).toEqual({ text: 'ok 1' });
  });

  it('calls queued behind a stuck worker are served, by the other worker or the replacement', async () => {
    // Two workers: the free one drains the queue while the other spins.
    const two = await start({ workers: 2, timeoutMs: 500 });
    const stuck = outcome(two.run(input({ do: 'loop' })));
    const others = await Promise.all([1, 2, 3, 4, 5].map((n) => two.run(input({ n }))));
    expect(others.map((action) => action?.text)).toEqual(['ok 1', 'ok 2', 'ok 3', 'ok 4', 'ok 5']);
    expect(await stuck).toBeInstanceOf(TransformTimeoutError);

    // One worker: the queue waits for the replacement, within its own wait bound.
    const one = await start({ workers: 1, timeoutMs: 300, queueTimeoutMs: 3000 }, MODULE, 'single.mjs');
    const spinning = outcome(one.run(input({ do: 'loop' })));
    const queued = await Promise.all([6, 7, 8].map((n) => one.run(input({ n }))));
    expect(queued.map((action) => action?.text)).toEqual(['ok 6', 'ok 7', 'ok 8']);
    expect(await spinning).toBeInstanceOf(TransformTimeoutError);
  });

  it('an async runaway (a timer that keeps writing) stops running when its call times out', async () => {
    const pool = await start({ timeoutMs: 300 });
    const file = join(root, 'counter.txt');
    const error = await outcome(pool.run(input({ do: 'interval', file })));
    expect(error).toBeInstanceOf(TransformTimeoutError);
    const atTimeout = statSync(file).size;
    expect(atTimeout).toBeGreaterThan(5); // it did run
    await sleep(300);
    expect(statSync(file).size).toBe(atTimeout); // and it does not any more
  });

  it('process.exit in a transform fails its call at once; the next call gets a new worker', async () => {
    const pool = await start({ timeoutMs: 5000 });
    const started = Date.now();
    const error = await outcome(pool.run(input({ do: 'exit' })));
    expect(error).toBeInstanceOf(TransformError);
    expect((error as Error).message).toMatch(/its worker stopped \(exit code 1\)/);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await pool.run(input({ n: 2 }))).toEqual({ text: 'ok 2' });
  });

  it('an uncaught error in a timer fails the call in flight with that error', async () => {
    const pool = await start({ timeoutMs: 5000 });
    const error = await outcome(pool.run(input({ do: 'timer-throw' })));
    expect(error).toBeInstanceOf(TransformError);
    expect((error as Error).message).toMatch(/its worker stopped \(thrown in a timer\)/);
    expect(await pool.run(input({ n: 3 }))).toEqual({ text: 'ok 3' });
  });

  it('a heap bomb ends at the worker heap limit, not in the gateway', async () => {
    const pool = await start({
      timeoutMs: 20_000,
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
    });
    const before = process.memoryUsage().heapUsed;
    const error = await outcome(pool.run(input({ do: 'bomb' })));
    expect(error).toBeInstanceOf(TransformError);
    expect((error as Error).message).toMatch(/memory limit/i);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(32 * 1024 * 1024);
    expect(await pool.run(input({ n: 4 }))).toEqual({ text: 'ok 4' });
  }, 30_000);

  it('runaway recursion is a RangeError from the transform; its worker lives on', async () => {
    const pool = await start();
    const error = await outcome(pool.run(input({ do: 'recurse' })));
    expect(error).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/call stack/) });
    expect(await pool.run(input({ n: 5 }))).toEqual({ text: 'ok 5' });
    expect(pool.size).toBe(1);
  });
});

describe('what a transform can reach', () => {
  it('sees an empty environment: no AGENTGATE_* settings, no tokens', async () => {
    const secret = 'hook-token-that-must-stay-in-the-gateway';
    process.env.AGENTGATE_ISOLATION_PROBE = secret;
    try {
      const pool = await start();
      const action = await pool.run(input({ do: 'env' }));
      expect(JSON.parse(action?.text ?? 'null')).toEqual({});
      expect(action?.text).not.toContain(secret);
    } finally {
      delete process.env.AGENTGATE_ISOLATION_PROBE;
    }
  });
});

describe('queueing and limits', () => {
  it('grows to at most `workers` threads, started on demand', async () => {
    const pool = await start({ workers: 2 });
    expect(pool.size).toBe(1);
    const results = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((n) => pool.run(input({ do: 'slow', ms: 50, n }))),
    );
    expect(results.map((action) => action?.text)).toEqual([1, 2, 3, 4, 5, 6].map((n) => `slow ${n}`));
    expect(pool.size).toBe(2);
  });

  /** Starts a spinning call and waits until its worker has been silent long enough to get no more calls. */
  async function spin(pool: TransformPool) {
    const marker = join(root, `spinning-${Math.random()}`);
    const spinning = outcome(pool.run(input({ do: 'loop', file: marker })));
    await waitFor(async () => (existsSync(marker) ? true : undefined), 'the loop to start', 3000);
    await sleep(100);
    return { spinning }; // wrapped: returning the promise itself would wait for it
  }

  it('sends calls ahead to a busy worker, but not to one that has gone quiet', async () => {
    const pool = await start({ workers: 1, timeoutMs: 400, queueTimeoutMs: 3000 });
    const results = await Promise.all([1, 2, 3].map((n) => pool.run(input({ do: 'slow', ms: 100, n }))));
    expect(results.map((action) => action?.text)).toEqual(['slow 1', 'slow 2', 'slow 3']);
    const { spinning } = await spin(pool);
    const started = Date.now();
    // Queued in the pool (not behind the loop): served by the replacement after the deadline.
    expect(await pool.run(input({ n: 4 }))).toEqual({ text: 'ok 4' });
    expect(Date.now() - started).toBeGreaterThan(150);
    expect(await spinning).toBeInstanceOf(TransformTimeoutError);
  });

  it('keeps each deadline with its own call when calls on one worker finish out of order', async () => {
    const pool = await start({ workers: 1, callsPerWorker: 2, timeoutMs: 500 });
    const long = outcome(pool.run(input({ do: 'slow', ms: 5000, n: 1 })));
    expect(await pool.run(input({ n: 2 }))).toEqual({ text: 'ok 2' }); // sent ahead, answered first
    expect(await pool.run(input({ n: 3 }))).toEqual({ text: 'ok 3' }); // reuses the freed place
    const started = Date.now();
    expect(await long).toBeInstanceOf(TransformTimeoutError);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('calls that had started on a worker stopped for a runaway fail with it, saying why', async () => {
    const pool = await start({ workers: 1, timeoutMs: 300 });
    // Both on one worker: the async call starts, awaits its timer, then the loop starts and
    // blocks that timer. Both are past 300 ms since they started when the worker is stopped
    // (or the second fails with the first): started calls cannot be handed elsewhere.
    const settled = await Promise.all([
      outcome(pool.run(input({ do: 'slow', ms: 250, n: 1 }))),
      outcome(pool.run(input({ do: 'loop' }))),
    ]);
    for (const error of settled) {
      expect((error as Error).message).toMatch(
        /did not finish within 300 ms; its worker was stopped|stopped because another call on it ran out of time/,
      );
    }
    expect(await pool.run(input({ n: 2 }))).toEqual({ text: 'ok 2' });
  });

  it('a call that waits too long for a worker fails on its own bound', async () => {
    const pool = await start({ workers: 1, timeoutMs: 1000, queueTimeoutMs: 100 });
    const { spinning: stuck } = await spin(pool);
    const waited = await outcome(pool.run(input({ n: 1 })));
    expect(waited).toBeInstanceOf(TransformTimeoutError);
    expect((waited as Error).message).toMatch(/no worker was free within 100 ms/);
    expect(await stuck).toBeInstanceOf(TransformTimeoutError);
  });

  it('refuses at once when maxQueued calls are already waiting', async () => {
    const pool = await start({ workers: 1, maxQueued: 2, timeoutMs: 500, queueTimeoutMs: 2000 });
    const { spinning: stuck } = await spin(pool);
    const calls = [pool.run(input({ n: 1 })), pool.run(input({ n: 2 }))];
    await expect(pool.run(input({ n: 3 }))).rejects.toThrow(/2 calls are already waiting for a worker/);
    expect(await stuck).toBeInstanceOf(TransformTimeoutError);
    expect(await Promise.all(calls)).toEqual([{ text: 'ok 1' }, { text: 'ok 2' }]);
  });
});

describe('loading', () => {
  it('a module that loops or exits at its top level fails to load, within the load bound', async () => {
    await expect(
      start({ loadTimeoutMs: 300 }, 'for (;;) {}\nexport default () => null;', 'hang.mjs'),
    ).rejects.toThrow(/"hang\.mjs": did not load within 300 ms/);
    await expect(start({}, 'process.exit(3);\nexport default () => null;', 'quit.mjs')).rejects.toThrow(
      /"quit\.mjs": failed to load: its worker stopped \(exit code 3\)/,
    );
  });

  it('messages a module posts on the worker port itself never crash the gateway', async () => {
    const atLoad =
      "import { parentPort } from 'node:worker_threads';\nparentPort.postMessage('junk');\nexport default () => null;";
    await expect(start({}, atLoad, 'early.mjs')).rejects.toThrow(
      /"early\.mjs": failed to load: unexpected first message/,
    );
    const duringCall = `import { parentPort } from 'node:worker_threads';
      export default () => {
        for (const junk of ['junk', null, 42, { id: -1, action: { text: 'forged' } }, { id: 'x', error: 7 }]) {
          parentPort.postMessage(junk);
        }
        return { text: 'real' };
      };`;
    const pool = await start({}, duringCall, 'chatty.mjs');
    expect(await pool.run(input({}))).toEqual({ text: 'real' });
    expect(await pool.run(input({}))).toEqual({ text: 'real' });
  });

  it('a replacement that cannot load fails the waiting calls once, and loads again when the file is back', async () => {
    const pool = await start({ timeoutMs: 2000 });
    const file = join(root, 'runaway.mjs');
    unlinkSync(file);
    expect(await outcome(pool.run(input({ do: 'exit' })))).toBeInstanceOf(TransformError);
    await expect(pool.run(input({ n: 1 }))).rejects.toThrow(/failed to load/);
    expect(pool.size).toBe(0); // no retry loop
    writeFileSync(file, MODULE);
    expect(await pool.run(input({ n: 2 }))).toEqual({ text: 'ok 2' });
  });
});

describe('retire and terminate', () => {
  it('retire ends idle workers now, busy ones after their call; a late call is still served', async () => {
    const pool = await start({ workers: 2 });
    const slow = pool.run(input({ do: 'slow', ms: 200, n: 1 }));
    const retired = pool.retire();
    expect(await slow).toEqual({ text: 'slow 1' });
    await retired;
    expect(pool.size).toBe(0);
    expect(await pool.run(input({ n: 2 }))).toEqual({ text: 'ok 2' });
    await waitFor(async () => (pool.size === 0 ? true : undefined), 'the late worker to end', 3000);
  });

  it('terminate stops a spinning worker and fails its call; later calls are refused', async () => {
    const pool = await start({ timeoutMs: 30_000 });
    const marker = join(root, 'started');
    const spinning = outcome(pool.run(input({ do: 'loop', file: marker })));
    await waitFor(async () => (existsSync(marker) ? true : undefined), 'the loop to start', 3000);
    const started = Date.now();
    await pool.terminate();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await spinning).toBeInstanceOf(TransformError);
    expect(pool.size).toBe(0);
    await expect(pool.run(input({ n: 1 }))).rejects.toThrow(/the gateway is stopping/);
  });
});
