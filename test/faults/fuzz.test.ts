/**
 * Property-based fuzz of every endpoint (fast-check) against the real CLI:
 * whatever arrives, the answer is a 2xx or a 4xx — never a 5xx — every error
 * body is CONTRACT §4's JSON `{"ok":false,"error","code"}`, the process keeps
 * running, and its memory stays bounded.
 *
 * Every failure is recorded (not only the first), grouped by what went wrong,
 * with the shortest request that showed it, so one run reports every class of
 * defect. Reproduce a run with FAULTS_SEED=<seed printed in its figure line>.
 */
import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportFigure, size } from './support/figures.js';
import { groupOf, problemsOf } from './support/fuzz-oracles.js';
import {
  describe as describeRequest,
  encode,
  type FuzzRequest,
  fuzzRequest,
} from './support/fuzz-requests.js';
import { GatewayProcess, rssAnonBytes } from './support/gateway-process.js';
import { exchange } from './support/raw-exchange.js';

const BATCH = 16;
const BATCHES = size(300, 120);
/**
 * Memory is compared from the end of a warm-up to the end of the run. Measured
 * over 12,000 requests: the gateway's anonymous RSS climbs while V8's heap
 * grows to its working size (~60 → ~97 MiB over the first ~1,600 requests),
 * then stays within ±2 MiB. So the warm-up is ~1,600 requests (~1,000 in the
 * short mode, which still has some settling left), and 16 MiB of growth after
 * it is a leak of more than ~5 KB per request over the full run's 3,200.
 */
const WARM_UP_BATCHES = size(100, 60);
const RSS_GROWTH_BOUND = 16 * 1024 * 1024;
const SEED = process.env.FAULTS_SEED ? Number(process.env.FAULTS_SEED) : Date.now() % 2 ** 31;

let gateway: GatewayProcess;
beforeAll(async () => {
  gateway = new GatewayProcess(undefined, {
    hooks: {
      mappings: [
        { id: 'deploy', match: { path: 'deploy' }, action: 'wake', textTemplate: 'Deployed {{service}}' },
      ],
    },
    agents: { defaults: { heartbeat: { every: '0' } } },
  });
  await gateway.start();
});
afterAll(async () => {
  await gateway.stop();
  rmSync(gateway.dir, { recursive: true, force: true });
});

/** The n-th client address in 127.0.0.0/8, so wrong tokens spread instead of locking one address out. */
function clientAddress(n: number): string {
  return `127.${1 + ((n >> 16) % 250)}.${(n >> 8) & 0xff}.${1 + (n % 250)}`;
}

describe('fuzzing every endpoint', () => {
  it(`answers ${BATCH * BATCHES} hostile requests with 2xx/4xx JSON only, without crashing or leaking`, async () => {
    const { hostname, port } = new URL(gateway.url);
    const failures = new Map<string, { count: number; example: string }>();
    const statuses = new Map<number, number>();
    let sent = 0;
    let batches = 0;
    let rssAfterWarmUp = 0;

    const property = fc.asyncProperty(
      fc.array(fuzzRequest, { minLength: BATCH, maxLength: BATCH }),
      async (requests) => {
        const results = await Promise.all(
          requests.map((request) =>
            exchange(encode(request), {
              host: hostname,
              port: Number(port),
              localAddress: clientAddress(sent++),
              answerTimeoutMs: 5_000,
              settleMs: 200,
              isHead: request.method === 'HEAD',
            }),
          ),
        );
        for (const [index, result] of results.entries()) {
          const request = requests[index] as FuzzRequest;
          for (const response of result.responses)
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          for (const problem of problemsOf(request, result)) {
            const key = groupOf(problem);
            const example = `${problem}\n      request: ${describeRequest(request)}`;
            const known = failures.get(key);
            if (!known) failures.set(key, { count: 1, example });
            else {
              known.count++;
              if (example.length < known.example.length) known.example = example;
            }
          }
        }
        if (++batches === WARM_UP_BATCHES) rssAfterWarmUp = rssAnonBytes(gateway.pid);
      },
    );
    await fc.assert(property, { numRuns: BATCHES, seed: SEED, endOnFailure: true });

    const rssAtEnd = rssAnonBytes(gateway.pid);
    const health = await fetch(`${gateway.url}/healthz`);
    reportFigure('fuzz', {
      seed: SEED,
      requests: sent,
      statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
      failureClasses: failures.size,
      rssAnonAfterWarmUpMiB: +(rssAfterWarmUp / 2 ** 20).toFixed(1),
      rssAnonAtEndMiB: +(rssAtEnd / 2 ** 20).toFixed(1),
      stillRunning: gateway.running,
    });
    for (const [key, { count, example }] of failures)
      console.log(`FUZZ FAILURE x${count}: ${key}\n    ${example}`);

    expect(gateway.running).toBe(true);
    expect(health.status).toBe(200);
    expect([...failures.keys()]).toEqual([]);
    expect(rssAtEnd - rssAfterWarmUp).toBeLessThan(RSS_GROWTH_BOUND);
  });
});
