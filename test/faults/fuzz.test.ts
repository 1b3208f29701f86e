/**
 * Property-based fuzz of every endpoint (fast-check) against the real CLI:
 * whatever arrives, the answer is a 2xx or a 4xx — never a 5xx — every error
 * body is the gateway's JSON `{"ok":false,"error","code"}` (docs/endpoints.md), the process keeps running, and its memory stays bounded.
 *
 * Every failure is recorded (not only the first), grouped by what went wrong,
 * with the shortest request that showed it, so one run reports every class of
 * defect. Reproduce a run with FAULTS_SEED=<seed printed in its figure line>.
 */
import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportFigure, SHORT, size } from './support/figures.js';
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
 * Memory (the gateway's anonymous RSS: heap and stacks, not the mmapped SQLite
 * file). Measured over 12,000 fuzz requests it climbs from ~45 to ~100 MiB while
 * V8's heap grows to its working size over the first ~1,600 requests, then
 * stays within ±2 MiB; on a loaded machine GC runs later and the plateau is
 * higher. Hence two bounds: all of it under 96 MiB of growth, and — in the full
 * run, whose second half starts well after the heap settled — under 16 MiB over
 * the second half, i.e. a leak of more than ~7 KB per request would show.
 */
const TOTAL_GROWTH_BOUND = 96 * 2 ** 20;
const SECOND_HALF_GROWTH_BOUND = 16 * 2 ** 20;
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
    const rssBefore = rssAnonBytes(gateway.pid);
    let rssAtHalf = 0;

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
        if (++batches === BATCHES / 2) rssAtHalf = rssAnonBytes(gateway.pid);
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
      rssAnonBeforeMiB: +(rssBefore / 2 ** 20).toFixed(1),
      rssAnonAtHalfMiB: +(rssAtHalf / 2 ** 20).toFixed(1),
      rssAnonAtEndMiB: +(rssAtEnd / 2 ** 20).toFixed(1),
      stillRunning: gateway.running,
    });
    for (const [key, { count, example }] of failures)
      console.log(`FUZZ FAILURE x${count}: ${key}\n    ${example}`);

    expect(gateway.running).toBe(true);
    expect(health.status).toBe(200);
    expect([...failures.keys()]).toEqual([]);
    expect(rssAtEnd - rssBefore).toBeLessThan(TOTAL_GROWTH_BOUND);
    if (!SHORT) expect(rssAtEnd - rssAtHalf).toBeLessThan(SECOND_HALF_GROWTH_BOUND);
  });
});
