/**
 * Runaway transforms over real HTTP (docs/transforms.md, "Bounds"): the gateway
 * answers a stuck, crashing or memory-hungry transform with 500 mapping_failed
 * within its bound while /hooks/wake keeps answering; what a transform left
 * running stops; the transform sees no gateway secrets; a reload and a stop end
 * the transform workers, and SIGTERM does not hang on them.
 */
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import {
  baseConfig,
  HOOK_TOKEN,
  merge,
  startTestGateway,
  type TestGateway,
  tempDir,
  writeConfig,
} from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { expectError, listEvents } from '../ingress/support.js';

/** The short time bound the gateway under test gives each transform call. */
const BOUND_MS = 2000;

const RUNAWAY = `
import { appendFileSync, writeFileSync } from 'node:fs';
export default async ({ payload }) => {
  switch (payload.do) {
    case 'loop':
      writeFileSync(payload.marker, 'spinning');
      for (;;) {}
    case 'interval':
      setInterval(() => appendFileSync(payload.file, 'x'), 5);
      return new Promise(() => {});
    case 'exit':
      process.exit(1);
    case 'bomb': {
      const hoard = [];
      for (;;) hoard.push({ index: hoard.length, text: 'x'.repeat(64) + hoard.length });
    }
    case 'env':
      return { kind: 'wake', text: 'env=' + JSON.stringify(process.env) };
    default:
      return { kind: 'wake', text: 'normal ' + payload.n };
  }
};
`;

/** A module that, once loaded, stamps a file every 20 ms for as long as its worker lives. */
const heartbeat = (file: string) => `
import { writeFileSync } from 'node:fs';
let beats = 0;
setInterval(() => writeFileSync(${JSON.stringify(file)}, String(++beats)), 20);
export default () => ({ kind: 'wake', text: 'beating' });
`;

function transformsDir(dir: string): string {
  const root = join(dir, 'hooks', 'transforms');
  mkdirSync(root, { recursive: true });
  return root;
}

/** Resolves once `file` has stopped changing for `quietMs` (it must exist). */
async function stopsChanging(file: string, quietMs = 300): Promise<void> {
  let last = statSync(file).mtimeMs;
  await waitFor(
    async () => {
      await sleep(quietMs);
      const now = statSync(file).mtimeMs;
      const quiet = now === last;
      last = now;
      return quiet ? true : undefined;
    },
    `${file} to stop changing`,
    5000,
  );
}

/** POSTs JSON with the hook token on a connection of its own; resolves with the status. */
function postOnce(url: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const MAPPINGS = [
  { id: 'runaway', match: { path: 'runaway' }, transform: { module: 'runaway.mjs' } },
  { id: 'beat', match: { path: 'beat' }, transform: { module: 'beat.mjs' } },
];

describe('runaway transforms over HTTP', () => {
  let gw: TestGateway;
  let dir: string;
  let beatFile: string;

  beforeAll(async () => {
    dir = tempDir('agentgate-runaway-');
    const root = transformsDir(dir);
    beatFile = join(dir, 'beat.txt');
    writeFileSync(join(root, 'runaway.mjs'), RUNAWAY);
    writeFileSync(join(root, 'beat.mjs'), heartbeat(beatFile));
    process.env.AGENTGATE_RUNAWAY_PROBE = HOOK_TOKEN;
    gw = await startTestGateway(
      { hooks: { mappings: MAPPINGS } },
      {
        dir,
        transforms: {
          timeoutMs: BOUND_MS,
          resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
        },
      },
    );
  });
  afterAll(async () => {
    delete process.env.AGENTGATE_RUNAWAY_PROBE;
    await gw?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a synchronous loop gets 500 mapping_failed within the bound, and /hooks/wake answers meanwhile', async () => {
    const marker = join(dir, 'spinning');
    const started = Date.now();
    let answeredAt = 0;
    const looping = gw.hook('runaway', { do: 'loop', marker }).then((answer) => {
      answeredAt = Date.now();
      return answer;
    });
    await waitFor(
      async () => (existsSync(marker) ? true : undefined),
      'the transform to start spinning',
      5000,
    );

    // While the transform spins, the gateway's own thread keeps serving.
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const before = Date.now();
      const wake = await gw.hook('wake', { text: `still here ${i}` });
      latencies.push(Date.now() - before);
      expect(wake.status).toBe(200);
    }
    const wakesDoneAt = Date.now();
    expect(Math.max(...latencies)).toBeLessThan(300);

    const answer = await looping;
    expectError(answer, 500, 'mapping_failed');
    expect(wakesDoneAt).toBeLessThan(answeredAt); // answered while the loop was still running
    expect(answeredAt - started).toBeGreaterThanOrEqual(BOUND_MS - 50);
    expect(answeredAt - started).toBeLessThan(BOUND_MS + 2000);
    // The mapping is healthy again with a fresh worker.
    expect((await gw.hook('runaway', { n: 1 })).status).toBe(200);
  });

  it('an async runaway is stopped when its request times out', async () => {
    const file = join(dir, 'counter.txt');
    const answer = await gw.hook('runaway', { do: 'interval', file });
    expectError(answer, 500, 'mapping_failed');
    const atAnswer = statSync(file).size;
    expect(atAnswer).toBeGreaterThan(10); // it ran until the deadline
    await sleep(300);
    expect(statSync(file).size).toBe(atAnswer); // and not after
  });

  it('process.exit(1) in a transform is a 500; the gateway lives on', async () => {
    const started = Date.now();
    const answer = await gw.hook('runaway', { do: 'exit' });
    expectError(answer, 500, 'mapping_failed');
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
    expect((await gw.hook('wake', { text: 'after exit' })).status).toBe(200);
    expect((await gw.hook('runaway', { n: 2 })).status).toBe(200);
  });

  it('a memory bomb is a 500 at the worker heap limit', async () => {
    const answer = await gw.hook('runaway', { do: 'bomb' });
    expectError(answer, 500, 'mapping_failed');
    expect((await gw.hook('runaway', { n: 3 })).status).toBe(200);
  });

  it('process.env in a transform is empty: no AGENTGATE_* variables, no hook token', async () => {
    expect(process.env.AGENTGATE_RUNAWAY_PROBE).toBe(HOOK_TOKEN); // set in the gateway's process
    expect((await gw.hook('runaway', { do: 'env' })).status).toBe(200);
    const text = (await listEvents(gw)).at(-1)?.text ?? '';
    expect(text).toContain('env={}');
    expect(text).not.toContain('AGENTGATE');
    expect(text).not.toContain(HOOK_TOKEN);
  });

  it('a normal transform answers as before', async () => {
    expect((await gw.hook('runaway', { n: 4 })).status).toBe(200);
    expect((await listEvents(gw)).at(-1)?.text).toContain('normal 4');
  });

  it('a reload ends the workers of transforms it dropped', async () => {
    expect((await gw.hook('beat', {})).status).toBe(200);
    await waitFor(async () => (existsSync(beatFile) ? true : undefined), 'the heartbeat file', 3000);
    const next = merge(baseConfig(), {
      hooks: {
        mappings: [
          MAPPINGS[0],
          { id: 'later', match: { path: 'added-later' }, action: 'wake', textTemplate: 'new' },
        ],
      },
    });
    writeConfig(dir, next, true);
    await waitFor(
      async () => ((await gw.hook('added-later', {})).status === 200 ? true : undefined),
      'the reload',
    );
    await stopsChanging(beatFile);
    // The kept mapping got a fresh pool and serves.
    expect((await gw.hook('runaway', { n: 5 })).status).toBe(200);
  });
});

describe('stopping with transforms', () => {
  it('gateway.stop() terminates transform workers', async () => {
    const dir = tempDir('agentgate-runaway-stop-');
    const beatFile = join(dir, 'beat.txt');
    writeFileSync(join(transformsDir(dir), 'beat.mjs'), heartbeat(beatFile));
    const gw = await startTestGateway({ hooks: { mappings: [MAPPINGS[1]] } }, { dir });
    try {
      await waitFor(async () => (existsSync(beatFile) ? true : undefined), 'the heartbeat file', 3000);
      await gw.stop();
      await stopsChanging(beatFile);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SIGTERM exits promptly with a transform loaded and one stuck in flight', async () => {
    const dir = tempDir('agentgate-runaway-cli-');
    writeFileSync(join(transformsDir(dir), 'runaway.mjs'), RUNAWAY);
    writeFileSync(join(transformsDir(dir), 'beat.mjs'), heartbeat(join(dir, 'beat.txt')));
    const config = writeConfig(dir, { hooks: { mappings: MAPPINGS } });
    const cli = await startCli(['--config', config]);
    try {
      const marker = join(dir, 'spinning');
      // One request per connection (agent: false): a kept-alive connection would hold the
      // stop until its own deadline, which is the HTTP server's business, not the transforms'.
      const stuck = postOnce(`${cli.url}/hooks/runaway`, { do: 'loop', marker });
      await waitFor(async () => (existsSync(marker) ? true : undefined), 'the transform to spin', 5000);
      const started = Date.now();
      const exited = await cli.kill('SIGTERM');
      // The in-flight request ends at the transform's 5 s bound; the stop deadline is 10 s.
      expect(Date.now() - started).toBeLessThan(8000);
      expect(exited).toEqual({ code: 0, signal: null });
      expect(await stuck).toBe(500);
    } finally {
      cli.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);
});
