/**
 * Text made of nothing but marker look-alikes, megabytes of it, as a run's text
 * attachments can carry (docs/untrusted-content.md, "Cost"): it is neutralised
 * without failing and with every look-alike removed, in time linear in its length,
 * while the event loop keeps serving timers and HTTP requests, one long pass at a
 * time.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { userTurnOf } from '../../src/agents/attachments.js';
import { MARKER_REMOVED, neutraliseMarkers, UNTRUSTED_END_MARKER } from '../../src/agents/safety.js';
import type { Attachment, ClaimedRun, Store } from '../../src/store/types.js';

const NAME = 'EXTERNAL_UNTRUSTED_CONTENT ';
const END_NAME = 'END_EXTERNAL_UNTRUSTED_CONTENT\n';

/** `names` marker names after one HTML tag (so both readings run), as a flat string. */
function lookalikes(names: number, name = NAME): string {
  return Buffer.from(`<b>notes</b>\n${name.repeat(names)}`).toString('utf8');
}
const namesInMiB = (mib: number) => Math.round((mib * 1024 * 1024) / NAME.length);

const count = (text: string, part: string) => text.split(part).length - 1;

/** A run as the worker claims it, with its text files, and a store that hands them out. */
function runWith(files: readonly Buffer[], id = 'run_flood'): { store: Store; run: ClaimedRun } {
  const attachments: Attachment[] = files.map((data, i) => ({
    name: `part-${i}.txt`,
    mediaType: 'text/plain',
    bytes: data.length,
    data,
  }));
  const store = { runs: { loadAttachments: async () => attachments } } as unknown as Store;
  const run = {
    id,
    message: 'summarise these files',
    source: 'hook:agent',
    allowUnsafeExternalContent: false,
    attachmentInfo: attachments.map(({ name, mediaType, bytes }) => ({ name, mediaType, bytes })),
  } as unknown as ClaimedRun;
  return { store, run };
}

/** The text between the one start marker and the one end marker, asserting there is one of each. */
function insideBoundary(prompt: string): string {
  const starts = [...prompt.matchAll(/<<<EXTERNAL_UNTRUSTED_CONTENT id="([0-9a-f]{16})"[^>]*>>>\n/g)];
  expect(starts).toHaveLength(1);
  const end = `<<<${UNTRUSTED_END_MARKER} id="${starts[0]?.[1]}">>>`;
  expect(prompt.endsWith(end)).toBe(true);
  expect(count(prompt, end)).toBe(1);
  const from = (starts[0]?.index as number) + (starts[0]?.[0].length as number);
  return prompt.slice(from, prompt.length - end.length - 1);
}

/**
 * CPU time of this thread, the event loop's, in ms: from the kernel's schedstat on
 * Linux (nanoseconds, this thread alone), else the process's (all its threads).
 */
function loopThreadCpuMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  }
}

/**
 * Watches the event loop with a 1 ms timer: the wall time between two of its runs
 * (worst and p99), and the most CPU the loop's thread spent between two of them —
 * what the work on the loop held it for, whatever else the machine runs.
 */
function watchLoop() {
  const gaps: number[] = [];
  let worstCpuMs = 0;
  let lastCpu = loopThreadCpuMs();
  let lastWall = performance.now();
  const timer = setInterval(() => {
    const cpu = loopThreadCpuMs();
    const wall = performance.now();
    worstCpuMs = Math.max(worstCpuMs, cpu - lastCpu);
    gaps.push(wall - lastWall);
    lastCpu = cpu;
    lastWall = wall;
  }, 1);
  return {
    async stop() {
      // A pass that held the loop to its end is seen by the timer's next run.
      await new Promise((wait) => setTimeout(wait, 20));
      clearInterval(timer);
      gaps.sort((a, b) => a - b);
      const p99WallMs = gaps[Math.ceil(0.99 * gaps.length) - 1] as number;
      return { worstCpuMs, worstWallMs: gaps.at(-1) as number, p99WallMs };
    },
  };
}

const cpuMs = (work: () => void) => {
  const before = loopThreadCpuMs();
  work();
  return loopThreadCpuMs() - before;
};
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

describe('a flood of marker look-alikes', () => {
  it('4 MiB of marker names after one HTML tag: neutralised without throwing, every one removed', () => {
    const names = 150_000; // ≈ 3.9 MiB: past where a spread push overflowed the stack (~125,000)
    const text = lookalikes(names);
    expect(text.length).toBeGreaterThan(3.8 * 1024 * 1024);
    const out = neutraliseMarkers(text);
    expect(count(out, MARKER_REMOVED)).toBe(names);
    expect(out).not.toMatch(/EXTERNAL_UNTRUSTED_CONTENT|UNTRUSTED/);
    // Nothing left reads as a marker: a second pass changes nothing.
    expect(neutraliseMarkers(out)).toBe(out);
  });

  it('a run with a 4 MiB look-alike file gets a prompt with one start, one end and no marker between', async () => {
    const { store, run } = runWith([Buffer.from(lookalikes(140_000, END_NAME))]);
    const turn = await userTurnOf(store, run);
    const inside = insideBoundary(turn.text);
    expect(count(inside, MARKER_REMOVED)).toBe(140_000);
    expect(inside).not.toMatch(/EXTERNAL_UNTRUSTED_CONTENT|UNTRUSTED/);
    expect(inside.startsWith('summarise these files\n\nAttachments (1):\n[attachment 1] part-0.txt')).toBe(
      true,
    );
  });

  it('costs linear time: 2 MiB of look-alikes about twice 1 MiB, not four times', () => {
    const small = lookalikes(namesInMiB(1));
    const large = lookalikes(namesInMiB(2));
    neutraliseMarkers(small); // the code warm
    // This thread's CPU time, the median of five, as a ratio: what else the machine runs moves
    // both alike. Linear work gives ~2×, quadratic ~4×.
    const times = { small: [] as number[], large: [] as number[] };
    for (let i = 0; i < 5; i++) {
      times.small.push(cpuMs(() => neutraliseMarkers(small)));
      times.large.push(cpuMs(() => neutraliseMarkers(large)));
    }
    const ratio = median(times.large) / median(times.small);
    console.log(
      `neutraliseMarkers, look-alikes: 1 MiB ${median(times.small).toFixed(0)} ms CPU, 2 MiB ${median(times.large).toFixed(0)} ms (×${ratio.toFixed(2)})`,
    );
    expect(ratio).toBeLessThan(3);
  });
});

describe('the event loop while a run neutralises megabytes', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((done) => (server ? server.close(done) : done(undefined)));
    server = undefined;
  });

  it('answers timers and HTTP requests promptly while 10 runs neutralise a 1 MiB look-alike file each', async () => {
    server = createServer((_, res) => res.end('ok'));
    await new Promise<void>((done) => server?.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const runs = Array.from({ length: 10 }, (_, i) =>
      runWith([Buffer.from(lookalikes(namesInMiB(1)))], `run_${i}`),
    );

    const loop = watchLoop();
    let done = false;
    // Started together, as a worker with ten free slots starts them.
    const turns = Promise.all(runs.map(({ store, run }) => userTurnOf(store, run))).finally(() => {
      done = true;
    });
    const latencies: number[] = [];
    while (!done) {
      const started = performance.now();
      expect(await (await fetch(url)).text()).toBe('ok');
      latencies.push(performance.now() - started);
    }
    const finished = await turns;
    const { worstCpuMs, worstWallMs, p99WallMs } = await loop.stop();

    for (const { text } of finished) expect(count(insideBoundary(text), MARKER_REMOVED)).toBe(namesInMiB(1));
    const worstRequestMs = Math.max(...latencies);
    console.log(
      `10 runs × 1 MiB of look-alikes: ${latencies.length} requests answered meanwhile, the slowest in ${worstRequestMs.toFixed(0)} ms; ` +
        `event loop held at most ${worstWallMs.toFixed(0)} ms (p99 ${p99WallMs.toFixed(0)} ms), ` +
        `the most CPU between two of its turns ${worstCpuMs.toFixed(0)} ms`,
    );
    // Slices of ~8 ms; what else holds the loop is a collection or one copy of a turn's
    // text (~40 ms for 10 MiB on the loaded 2-core machine). Wall time also counts the
    // scheduler's pauses on a busy machine (up to ~200 ms seen with a load of 8 on 2 cores),
    // hence its looser bounds. Before the pass was sliced, each turn held the loop whole:
    // ~0.7 s of CPU for each of these runs, 7 s in all.
    expect(worstCpuMs).toBeLessThan(100);
    expect(p99WallMs).toBeLessThan(150);
    expect(worstWallMs).toBeLessThan(500);
    expect(worstRequestMs).toBeLessThan(500);
    expect(latencies.length).toBeGreaterThan(10);
  });

  it('runs long passes one at a time, in the order they came, whatever their number', async () => {
    const order: string[] = [];
    const runs = ['first', 'second', 'third'].map((id) =>
      runWith([Buffer.from(lookalikes(namesInMiB(0.5)))], id),
    );
    await Promise.all(
      runs.map(({ store, run }) => userTurnOf(store, run, { onSlice: () => order.push(run.id) })),
    );
    // Each run's slices together, none interleaved with another's: one pass's memory at a time.
    const runsInOrder = order.filter((id, i) => id !== order[i - 1]);
    expect(runsInOrder).toEqual(['first', 'second', 'third']);
    expect(order.length).toBeGreaterThan(3);
  });

  it("stops a pass, waiting or running, with its signal's reason", async () => {
    const running = runWith([Buffer.from(lookalikes(namesInMiB(1)))], 'running');
    const waiting = runWith([Buffer.from(lookalikes(namesInMiB(1)))], 'waiting');
    const third = runWith([Buffer.from(lookalikes(namesInMiB(0.5)))], 'third');
    const stopRunning = new AbortController();
    const stopWaiting = new AbortController();
    const slices: string[] = [];
    const onSlice = (id: string) => () => {
      slices.push(id);
      if (id === 'running' && slices.length === 2) stopRunning.abort(new Error('run timed out'));
    };
    const first = userTurnOf(running.store, running.run, {
      signal: stopRunning.signal,
      onSlice: onSlice('running'),
    });
    const second = userTurnOf(waiting.store, waiting.run, {
      signal: stopWaiting.signal,
      onSlice: onSlice('waiting'),
    });
    const last = userTurnOf(third.store, third.run, { onSlice: onSlice('third') });
    stopWaiting.abort(new Error('shutting down'));
    await expect(second).rejects.toThrow('shutting down');
    await expect(first).rejects.toThrow('run timed out');
    // The one after them still runs, after the running one stopped.
    expect(count(insideBoundary((await last).text), MARKER_REMOVED)).toBe(namesInMiB(0.5));
    expect(slices.filter((id) => id === 'waiting')).toEqual([]);
    expect(slices.indexOf('third')).toBeGreaterThan(slices.lastIndexOf('running'));
  });
});
