/**
 * A flood of marker look-alikes through the real gateway (docs/untrusted-content.md,
 * "Cost"): runs whose text files are nothing but marker names after one HTML tag, the
 * most work per byte the boundary's neutraliser has. While ten such runs of 1 MiB each
 * execute, /hooks/wake is answered in well under a second (p50 a few slices); four
 * runs of 3.3 MiB each (≈128,000 names, past where the neutraliser used to overflow its
 * stack) all succeed, with every look-alike removed, and leave the gateway's memory
 * about where it was. Before the neutraliser ran in slices, the ten runs took 6.9 s of
 * gateway CPU in one piece each and the wake p99 was 6.0 s; the four runs failed with
 * `Maximum call stack size exceeded` and left 966 MB resident.
 */
import { readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { quantile, reportFigure, size } from './support/figures.js';
import { GatewayProcess } from './support/gateway-process.js';
import { post } from './support/load.js';

const NAME = 'EXTERNAL_UNTRUSTED_CONTENT ';
const MARKER_REMOVED = '[[marker removed]]';
const CLIENTS = 4;
const QUIET_MS = size(4_000, 2_000);
/** The red team's shape: runs with one 1 MiB look-alike file each, all at once. */
const FLOOD_RUNS = size(10, 6);
const MiB = 1024 * 1024;

/**
 * The model: an OpenAI-compatible endpoint that keeps each request's body as bytes and
 * answers at once. The wake clients share this process, so it must not parse megabytes
 * of JSON while they are timed; the prompts are read after the runs.
 */
const requestBodies: Buffer[] = [];
const REPLY = JSON.stringify({
  id: 'chatcmpl-flood',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'read it' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
});
let model: Server;
let gateway: GatewayProcess;
beforeAll(async () => {
  model = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requestBodies.push(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json' }).end(REPLY);
    });
  });
  await new Promise<void>((listening) => model.listen(0, '127.0.0.1', listening));
  const baseUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
  gateway = new GatewayProcess(undefined, {
    // Ten files of 1 MiB fit, in base64, with the JSON around them.
    hooks: { maxBodyBytes: 16 * MiB, attachments: { maxBytes: 10 * MiB } },
    models: { providers: { fake: { api: 'openai-chat', baseUrl, apiKey: 'sk-flood' } } },
    agents: { defaults: { model: 'fake/gpt-4o-mini', heartbeat: { every: '0' } } },
  });
  await gateway.start();
});
afterAll(async () => {
  await gateway?.stop();
  await new Promise((closed) => model?.close(closed));
  if (gateway) rmSync(gateway.dir, { recursive: true, force: true });
});

/** `names` marker names after one HTML tag. */
const lookalikes = (names: number) => Buffer.from(`<b>notes</b>\n${NAME.repeat(names)}`);
const namesIn = (mib: number) => Math.round((mib * MiB) / NAME.length);
const count = (text: string, part: string) => text.split(part).length - 1;

function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** Latencies (ms) of /hooks/wake requests sent by `CLIENTS` keep-alive clients until `until()` says stop. */
async function wakeLatencies(tag: string, until: () => boolean): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const latencies: number[] = [];
  let n = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (!until()) {
        const body = JSON.stringify({ text: `${tag} ${n++}`, mode: 'next-heartbeat' });
        const started = process.hrtime.bigint();
        const answer = await post(agent, gateway.url, '/hooks/wake', body);
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (answer.status !== 200) throw new Error(`wake answered ${answer.status}: ${answer.body}`);
      }
    }),
  );
  agent.destroy();
  return latencies;
}

/** Posts one run per file list; resolves with the run ids. */
async function postRuns(tag: string, fileLists: Buffer[][]): Promise<string[]> {
  const agent = new Agent({ keepAlive: false });
  const ids = await Promise.all(
    fileLists.map(async (files, i) => {
      const body = JSON.stringify({
        message: `${tag} ${i}: summarise the notes`,
        deliver: false,
        attachments: files.map((data, k) => ({
          name: `notes-${k}.txt`,
          mediaType: 'text/plain',
          data: data.toString('base64'),
        })),
      });
      const answer = await post(agent, gateway.url, '/hooks/agent', body);
      if (answer.status !== 202) throw new Error(`agent answered ${answer.status}: ${answer.body}`);
      return JSON.parse(answer.body).runId as string;
    }),
  );
  agent.destroy();
  return ids;
}

/** Resolves when every run has finished, with their views. */
async function finished(ids: string[]): Promise<{ id: string; status: string; error: string | null }[]> {
  for (;;) {
    const views = await Promise.all(
      ids.map(async (id) => {
        const answer = await fetch(`${gateway.url}/api/runs/${id}`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        return (await answer.json()) as { id: string; status: string; error: string | null };
      }),
    );
    if (views.every((view) => ['succeeded', 'failed', 'timed_out'].includes(view.status))) return views;
    await new Promise((wait) => setTimeout(wait, 100));
  }
}

/** The user turn of every prompt the model got for runs tagged `tag`. */
function promptsOf(tag: string): string[] {
  return requestBodies
    .map(
      (body) =>
        (JSON.parse(body.toString('utf8')) as { messages: { content: unknown }[] }).messages.at(-1)?.content,
    )
    .filter((content): content is string => typeof content === 'string' && content.includes(`${tag} `));
}

/** Asserts one start and one end marker with the wrap's id, and no marker name between them. */
function expectOneBoundary(prompt: string): string {
  const starts = [...prompt.matchAll(/<<<EXTERNAL_UNTRUSTED_CONTENT id="([0-9a-f]{16})"[^>]*>>>\n/g)];
  expect(starts).toHaveLength(1);
  const end = `<<<END_EXTERNAL_UNTRUSTED_CONTENT id="${starts[0]?.[1]}">>>`;
  expect(prompt.endsWith(end)).toBe(true);
  const inside = prompt.slice((starts[0]?.index as number) + (starts[0]?.[0].length as number), -end.length);
  expect(inside).not.toMatch(/EXTERNAL_UNTRUSTED_CONTENT|UNTRUSTED/);
  return inside;
}

describe('a flood of marker look-alikes through the gateway', () => {
  it('keeps /hooks/wake answered while runs with 1 MiB look-alike files execute', async () => {
    const quietUntil = Date.now() + QUIET_MS;
    const quiet = await wakeLatencies('quiet', () => Date.now() > quietUntil);

    const files = Array.from({ length: FLOOD_RUNS }, () => [lookalikes(namesIn(1))]);
    const cpuBefore = gatewayCpuMs();
    // From the last accept on: the uploads' own cost (parsing 1.4 MiB bodies, committing the
    // files) is the ingress's, measured elsewhere; this window is the runs executing.
    const ids = await postRuns('flood', files);
    let done = false;
    const windowStarted = performance.now();
    const runs = finished(ids).then((views) => {
      done = true;
      return views;
    });
    const loaded = await wakeLatencies('loaded', () => done);
    const views = await runs;
    const cpuMs = gatewayCpuMs() - cpuBefore;

    for (const view of views) expect(view.status, view.error ?? '').toBe('succeeded');
    const prompts = promptsOf('flood');
    expect(prompts).toHaveLength(FLOOD_RUNS);
    for (const prompt of prompts) expect(count(expectOneBoundary(prompt), MARKER_REMOVED)).toBe(namesIn(1));

    const windowSeconds = (performance.now() - windowStarted) / 1000;
    const figures = {
      runs: FLOOD_RUNS,
      gatewayCpuMs: Math.round(cpuMs),
      quietP50Ms: +quantile(quiet, 0.5).toFixed(1),
      quietP99Ms: +quantile(quiet, 0.99).toFixed(1),
      loadedWakesPerSecond: Math.round(loaded.length / windowSeconds),
      loadedP50Ms: +quantile(loaded, 0.5).toFixed(1),
      loadedP99Ms: +quantile(loaded, 0.99).toFixed(1),
      loadedMaxMs: +Math.max(...loaded).toFixed(1),
    };
    reportFigure('lookalike-flood', figures);
    // The door stays open. Before, each run held the event loop for its whole pass: wake
    // p99 4.1–6.0 s, ~5 wakes a second answered. Now a wake waits a slice or two (4 ms each)
    // behind the passes, and sometimes a step that copies a run's megabyte in one piece (its
    // files read from the store, the provider's request body) or a collection: on the loaded
    // 2-core machine p99 0.1–0.4 s, p50 13–20 ms.
    expect(figures.loadedP99Ms).toBeLessThan(1_000);
    expect(figures.loadedMaxMs).toBeLessThan(2_000);
    expect(figures.loadedWakesPerSecond).toBeGreaterThan(20);
  });

  it('runs four 3.3 MiB look-alike files (≈128,000 names each) to success, memory back near where it was', async () => {
    const names = namesIn(3.3);
    const before = memoryOf(gateway.pid);
    const views = await finished(
      await postRuns(
        'large',
        Array.from({ length: 4 }, () => [lookalikes(names)]),
      ),
    );
    const after = memoryOf(gateway.pid);

    for (const view of views) expect(view.status, view.error ?? '').toBe('succeeded');
    const prompts = promptsOf('large');
    expect(prompts).toHaveLength(4);
    for (const prompt of prompts) expect(count(expectOneBoundary(prompt), MARKER_REMOVED)).toBe(names);
    reportFigure('lookalike-flood-memory', {
      runs: 4,
      names,
      rssBeforeMiB: Math.round(before.rssMiB),
      peakMiB: Math.round(after.peakMiB),
      rssAfterMiB: Math.round(after.rssMiB),
    });
    // Four uploads of 4.4 MiB of base64 at once, then one pass at a time: the bodies, their
    // files and one pass's arrays (9 bytes a character), not four passes' worth.
    expect(after.rssMiB - before.rssMiB).toBeLessThan(300);
  });
});

/** The gateway process's CPU time so far, user and system, in ms (from /proc). */
function gatewayCpuMs(): number {
  const fields = readFileSync(`/proc/${gateway.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // utime and stime are fields 14 and 15 of stat, the 12th and 13th after the command name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
