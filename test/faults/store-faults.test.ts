/**
 * A store that fills up or goes read-only (real faults, Linux as root): while
 * it cannot write, hooks answer 503 `unavailable` and nothing is half-written;
 * reads go on; when the space or the disk is back, the refused requests retried
 * under their Idempotency-Key are accepted as new. Afterwards every 2xx is in
 * the store exactly once with its idempotency record, and no refused request
 * left a row or a key. `/readyz` tells a load balancer: 503 while writes fail —
 * also after a pause with no hook traffic at all, which is what a replica taken
 * out of rotation sees — and 200 again by itself once the space is back.
 * test/ingress/store-unavailable.test.ts covers a store locked by another process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMIT_CHECK_INTERVAL_MS } from '../../src/server/commit-check.js';
import { ADMIN_TOKEN } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { reportFigure, size } from './support/figures.js';
import {
  Ext4Volume,
  ext4Unavailable,
  fillUp,
  mountTmpfs,
  tmpfsUnavailable,
  unmount,
} from './support/filesystems.js';
import { GatewayProcess, withReadOnlyDb } from './support/gateway-process.js';
import { accepted, checkStore, sendTagged, type Tagged } from './support/tagged-requests.js';

const BEFORE = size(200, 50);
const DURING = size(300, 60);
const AFTER = size(200, 50);

const noTmpfs = tmpfsUnavailable();
const noExt4 = ext4Unavailable();
if (noTmpfs) console.warn(`store faults: skipping the full-disk test: ${noTmpfs}`);
if (noExt4) console.warn(`store faults: skipping the read-only test: ${noExt4}`);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function mountpoint(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-store-fault-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startOn(dir: string): Promise<GatewayProcess> {
  const gateway = new GatewayProcess(dir, { agents: { defaults: { heartbeat: { every: '0' } } } });
  await gateway.start();
  cleanups.push(() => gateway.stop());
  return gateway;
}

/** Sends `count` tagged requests one after another (wake and agent in turn). */
async function sendMany(
  agent: Agent,
  gateway: GatewayProcess,
  phase: string,
  count: number,
): Promise<Tagged[]> {
  const sent: Tagged[] = [];
  for (let i = 0; i < count; i++) {
    sent.push(await sendTagged(agent, gateway.url, `${phase}-${i}`, i % 2 === 0 ? 'wake' : 'agent'));
  }
  return sent;
}

/** Reads still work while writes cannot: health, and a run accepted before the fault. */
async function readsWork(gateway: GatewayProcess, before: Tagged[]): Promise<boolean> {
  const run = before.find((t) => t.kind === 'agent');
  const health = await fetch(`${gateway.url}/healthz`);
  const answer = await fetch(`${gateway.url}/api/runs/${run?.id}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  return health.status === 200 && answer.status === 200;
}

/** `/readyz`'s status and reason now. */
async function readiness(gateway: GatewayProcess): Promise<{ status: number; error?: string }> {
  const answer = await fetch(`${gateway.url}/readyz`);
  const body = (await answer.json()) as { error?: string };
  return { status: answer.status, error: body.error };
}

/**
 * `/readyz` while writes fail: right after the refused hooks, and again after a pause
 * longer than the commit check's interval with no hook traffic, so the second answer
 * is the probe's own. Both must be 503 for the balancer to keep the replica out.
 */
async function readinessWhileFailing(gateway: GatewayProcess) {
  const told = await readiness(gateway);
  await sleep(COMMIT_CHECK_INTERVAL_MS + 200);
  const probed = await readiness(gateway);
  return { told, probed };
}

/** Retries every refused request under its key; returns each key's final outcome. */
async function retryRefused(
  agent: Agent,
  gateway: GatewayProcess,
  all: Tagged[],
): Promise<Map<string, Tagged>> {
  const final = new Map(all.map((t) => [t.key, t]));
  for (const t of all.filter((t) => !accepted(t))) {
    const retry = await sendTagged(agent, gateway.url, t.key, t.kind);
    final.set(t.key, retry);
  }
  return final;
}

function statusCounts(sent: readonly Tagged[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const t of sent) {
    const label = t.code ? `${t.status} ${t.code}` : String(t.status);
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}

describe('a store that cannot write', () => {
  it.skipIf(noTmpfs)(
    'when the disk is full: 503 unavailable, nothing half-written, recovery once freed',
    async () => {
      const dir = mountpoint();
      // Room for the WAL to reach the gateway's own checkpoint size (20,000 pages, ~80 MiB,
      // should the checkpointer thread fall behind) once the filler is gone: on a smaller
      // disk, freeing the filler is not enough space to recover.
      mountTmpfs(dir, 128 * 1024 * 1024);
      cleanups.push(() => unmount(dir));
      const gateway = await startOn(dir);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      cleanups.push(() => agent.destroy());

      const before = await sendMany(agent, gateway, 'before-full', BEFORE);
      expect(before.filter(accepted)).toHaveLength(BEFORE);

      expect((await readiness(gateway)).status).toBe(200);
      const filler = join(dir, 'filler');
      const filled = fillUp(filler);
      const during = await sendMany(agent, gateway, 'full', DURING);
      // A write that fits in WAL space the checkpointer thread already recycled still commits
      // on a full disk (docs/operating.md, "The WAL on SQLite"): write on until the store
      // refuses every write, the state /readyz must report.
      for (let round = 0; round < 30 && !during.slice(-5).every((t) => !accepted(t)); round++) {
        during.push(...(await sendMany(agent, gateway, `full-more-${round}`, 10)));
      }
      const readable = await readsWork(gateway, before);
      // A second later the probe answers 503 by itself: the disk has no room left, however
      // much recycled WAL space its own one-page commit could still find (docs/operating.md,
      // "When /readyz says the store cannot commit").
      const whileFull = await readinessWhileFailing(gateway);
      const stillFull = await readinessWhileFailing(gateway);

      rmSync(filler);
      // Ready again by itself, before any hook is sent: the probe found the room.
      const freedAt = Date.now();
      await waitFor(async () => (await readiness(gateway)).status === 200, '/readyz 200 after freeing');
      const readyAfterMs = Date.now() - freedAt;
      const retried = await retryRefused(agent, gateway, during);
      const after = await sendMany(agent, gateway, 'after-full', AFTER);
      const exit = await gateway.kill('SIGTERM');

      const final = new Map([...before, ...after].map((t) => [t.key, t]));
      for (const [key, t] of retried) final.set(key, t);
      const problems = withReadOnlyDb(gateway.dbPath, (db) => checkStore(db, final));
      const refused = during.filter((t) => !accepted(t));
      reportFigure('store-full', {
        fillerMiB: +(filled / 2 ** 20).toFixed(1),
        before: statusCounts(before),
        whileFull: statusCounts(during),
        retriedAfterFreeing: statusCounts(
          [...retried.values()].filter((t) => refused.some((r) => r.key === t.key)),
        ),
        after: statusCounts(after),
        readsWhileFull: readable,
        readyzWhileFull: [whileFull.told.status, whileFull.probed.status, stillFull.probed.status],
        readyzAfterFreeingMs: readyAfterMs,
        storeProblems: problems.length,
        exitCode: exit.code,
      });

      // The disk really was full: requests were refused, each as 503 unavailable.
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.filter((t) => t.status !== 503 || t.code !== 'unavailable')).toEqual([]);
      expect(readable).toBe(true);
      // Not ready while full, told by the refused writes and then by the probe alone, every time.
      expect(whileFull.told.status, whileFull.told.error).toBe(503);
      for (const probed of [whileFull.probed, stillFull.told, stillFull.probed]) {
        expect(probed.status, probed.error).toBe(503);
        expect(probed.error).toContain('the store cannot commit');
      }
      expect(stillFull.probed.error).toMatch(/MiB free, below the 8\.0 MiB a commit may need/);
      // Retries of refused keys are new work, not replays, and are accepted once space is back.
      expect([...retried.values()].filter((t) => !accepted(t))).toEqual([]);
      expect(after.filter(accepted)).toHaveLength(AFTER);
      expect(problems).toEqual([]);
      expect(exit.code).toBe(0);
    },
  );

  it.skipIf(noExt4)(
    'when the disk goes read-only: 503 unavailable, nothing half-written, recovery once repaired',
    async () => {
      const dir = mountpoint();
      const volume = new Ext4Volume(dir);
      volume.mount();
      cleanups.push(() => volume.remove());
      let gateway = await startOn(dir);
      let agent = new Agent({ keepAlive: true, maxSockets: 1 });

      const before = await sendMany(agent, gateway, 'before-ro', BEFORE);
      expect(before.filter(accepted)).toHaveLength(BEFORE);

      expect((await readiness(gateway)).status).toBe(200);
      volume.failReadOnly();
      const during = await sendMany(agent, gateway, 'read-only', DURING);
      const readable = await readsWork(gateway, before);
      const whileReadOnly = await readinessWhileFailing(gateway);
      // Linux keeps an ext4 that failed read-only until it is unmounted, so recovery
      // is what an operator does: stop the gateway, repair, mount, start again.
      const exitWhileReadOnly = await gateway.kill('SIGTERM');
      agent.destroy();
      volume.repair();
      gateway = await startOn(dir);
      const readyAfterRepair = await readiness(gateway);
      agent = new Agent({ keepAlive: true, maxSockets: 1 });
      cleanups.push(() => agent.destroy());

      const retried = await retryRefused(agent, gateway, during);
      const after = await sendMany(agent, gateway, 'after-ro', AFTER);
      const exit = await gateway.kill('SIGTERM');

      const final = new Map([...before, ...after].map((t) => [t.key, t]));
      for (const [key, t] of retried) final.set(key, t);
      const problems = withReadOnlyDb(gateway.dbPath, (db) => checkStore(db, final));
      reportFigure('store-read-only', {
        before: statusCounts(before),
        whileReadOnly: statusCounts(during),
        readsWhileReadOnly: readable,
        readyzWhileReadOnly: [whileReadOnly.told.status, whileReadOnly.probed.status],
        readyzAfterRepair: readyAfterRepair.status,
        exitWhileReadOnly,
        retriedAfterRepair: statusCounts(
          [...retried.values()].filter((t) => during.some((d) => d.key === t.key)),
        ),
        after: statusCounts(after),
        storeProblems: problems.length,
        exitCode: exit.code,
      });

      expect(during.filter((t) => t.status !== 503 || t.code !== 'unavailable')).toEqual([]);
      expect(readable).toBe(true);
      expect(whileReadOnly.told.status, whileReadOnly.told.error).toBe(503);
      expect(whileReadOnly.probed.status, whileReadOnly.probed.error).toBe(503);
      expect(whileReadOnly.probed.error).toContain('the store cannot commit');
      expect(readyAfterRepair.status).toBe(200);
      expect([...retried.values()].filter((t) => !accepted(t))).toEqual([]);
      expect(after.filter(accepted)).toHaveLength(AFTER);
      expect(problems).toEqual([]);
      expect(exit.code).toBe(0);
    },
  );
});
