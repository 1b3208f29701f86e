/**
 * "Accepted means durable" at full load: the real CLI is loaded over many
 * keep-alive connections and killed mid-load (SIGKILL, three rounds on one
 * store; SIGTERM once). After a restart every acknowledged eventId/runId is in
 * the store. test/e2e/durability.test.ts covers the quiet case (kill right
 * after the last answer); this is the same promise with requests in flight.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { reportFigure, size } from './support/figures.js';
import { GatewayProcess } from './support/gateway-process.js';
import { type Acknowledged, missingFrom, startLoad } from './support/load.js';

const ROUNDS = size(3, 1);
const ACKNOWLEDGED_BEFORE_KILL = size(10_000, 2_000);
const CONNECTIONS = 64;

let gateways: GatewayProcess[] = [];
afterEach(async () => {
  for (const gateway of gateways) {
    await gateway.stop();
    rmSync(gateway.dir, { recursive: true, force: true });
  }
  gateways = [];
});

function newGateway(): GatewayProcess {
  // Heartbeats off: the store sees only the load and the agent runs it starts.
  const gateway = new GatewayProcess(undefined, { agents: { defaults: { heartbeat: { every: '0' } } } });
  gateways.push(gateway);
  return gateway;
}

/** Loads the running gateway until `count` are acknowledged, then sends `signal` with the load still on. */
async function loadAndSignal(gateway: GatewayProcess, tag: string, signal: NodeJS.Signals, count: number) {
  const load = startLoad(gateway.url, tag, CONNECTIONS);
  const started = Date.now();
  await load.reached(count);
  const acknowledgedAtSignal = load.acknowledged.length;
  const exit = await gateway.kill(signal);
  // The loops end by themselves on the first transport error after the exit.
  await load.done;
  return {
    load,
    exit,
    acknowledgedAtSignal,
    seconds: (Date.now() - started) / 1000,
  };
}

/** Spot-checks some acknowledged ids through the admin API of the restarted gateway. */
async function checkThroughAdmin(
  gateway: GatewayProcess,
  sample: readonly Acknowledged[],
): Promise<string[]> {
  const wrong: string[] = [];
  for (const entry of sample) {
    if (entry.kind !== 'agent') continue;
    const response = await fetch(`${gateway.url}/api/runs/${entry.id}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    if (response.status !== 200 || ((await response.json()) as { runId?: string }).runId !== entry.id) {
      wrong.push(entry.id);
    }
  }
  return wrong;
}

describe('kill -9 at full load', () => {
  it(`loses none of >= ${ACKNOWLEDGED_BEFORE_KILL} acknowledged requests, ${ROUNDS} round(s)`, async () => {
    const gateway = newGateway();
    const acknowledged: Acknowledged[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      await gateway.start();
      const { load, exit, acknowledgedAtSignal, seconds } = await loadAndSignal(
        gateway,
        `round ${round}`,
        'SIGKILL',
        ACKNOWLEDGED_BEFORE_KILL,
      );
      expect(exit.signal).toBe('SIGKILL');
      // Killed mid-load: requests were still in flight when the process died.
      expect(load.transportErrors).toBeGreaterThan(0);
      acknowledged.push(...load.acknowledged);

      await gateway.start();
      const missing = missingFrom(acknowledged, gateway.storedIds());
      const wrongThroughAdmin = await checkThroughAdmin(gateway, load.acknowledged.slice(-200));
      reportFigure('kill-9', {
        round,
        acknowledgedThisRound: load.acknowledged.length,
        acknowledgedAtSignal,
        acknowledgedTotal: acknowledged.length,
        inFlightAtKill: load.transportErrors,
        lost: missing.length,
        requestsPerSecond: Math.round(load.acknowledged.length / seconds),
      });
      expect(load.acknowledged.length).toBeGreaterThanOrEqual(ACKNOWLEDGED_BEFORE_KILL);
      expect(missing).toEqual([]);
      expect(wrongThroughAdmin).toEqual([]);
      expect((await gateway.kill('SIGTERM')).code).toBe(0);
    }
    expect(new Set(acknowledged.map((a) => a.id)).size).toBe(acknowledged.length);
  });
});

describe('SIGTERM at load', () => {
  it(`exits 0 and loses none of >= ${ACKNOWLEDGED_BEFORE_KILL} acknowledged requests`, async () => {
    const gateway = newGateway();
    await gateway.start();
    const { load, exit, acknowledgedAtSignal, seconds } = await loadAndSignal(
      gateway,
      'sigterm',
      'SIGTERM',
      ACKNOWLEDGED_BEFORE_KILL,
    );
    expect(exit).toEqual({ code: 0, signal: null });

    await gateway.start();
    const missing = missingFrom(load.acknowledged, gateway.storedIds());
    reportFigure('sigterm', {
      acknowledged: load.acknowledged.length,
      acknowledgedAtSignal,
      answeredWhileClosing: Object.fromEntries(load.refused),
      exitCode: exit.code,
      lost: missing.length,
      requestsPerSecond: Math.round(load.acknowledged.length / seconds),
    });
    expect(load.acknowledged.length).toBeGreaterThanOrEqual(ACKNOWLEDGED_BEFORE_KILL);
    expect(missing).toEqual([]);
    // Nothing but "accepted" and "closing, retry" (503) was answered.
    expect([...load.refused.keys()].filter((status) => status !== 503)).toEqual([]);
    expect((await gateway.kill('SIGTERM')).code).toBe(0);
  });
});
