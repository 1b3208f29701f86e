/**
 * Store unavailable (docs/durability.md): while another connection holds
 * SQLite's write lock, a hook request waits out the busy timeout and is
 * answered 503 `unavailable` with nothing written; once the lock is released
 * the retry succeeds and exactly one record exists.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, getRun, listEvents } from './support.js';

/** Holds the write lock from another thread for `holdMs`, then releases it. */
const LOCK_HOLDER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.exec('BEGIN EXCLUSIVE');
parentPort.postMessage('locked');
setTimeout(() => { db.exec('ROLLBACK'); db.close(); parentPort.postMessage('released'); }, workerData.holdMs);
`;

function holdLock(path: string, holdMs: number): Promise<{ released: Promise<void> }> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(LOCK_HOLDER, { eval: true, workerData: { path, holdMs, driver } });
  const released = new Promise<void>((resolve, reject) => {
    worker.on('message', (message) => {
      if (message === 'released') resolve();
    });
    worker.once('error', reject);
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (message) => {
      if (message === 'locked') resolve({ released });
    });
    worker.once('error', reject);
  });
}

describe('503 unavailable while the store is locked', () => {
  let gw: TestGateway;
  let db: Database.Database;
  beforeAll(async () => {
    gw = await startTestGateway();
    db = new Database(join(gw.dir, 'state', 'agentgate.db'));
  });
  afterEach(() => {
    if (db.inTransaction) db.exec('ROLLBACK');
  });
  afterAll(async () => {
    db.close();
    await gw.stop();
  });

  it('answers a wake with 503, stores nothing, and the retry succeeds once', async () => {
    const text = 'written only after the lock is released';
    db.exec('BEGIN EXCLUSIVE');
    const started = Date.now();
    const refused = await gw.hook('wake', { text });
    expectError(refused, 503, 'unavailable');
    // It waited for the lock (busy timeout) before giving up.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    db.exec('ROLLBACK');

    expect((await listEvents(gw)).filter((e) => e.text === text)).toHaveLength(0);
    const retry = await gw.hook('wake', { text });
    expect(retry.status).toBe(200);
    expect(retry.body.eventOutcome).toBe('queued');
    const events = (await listEvents(gw)).filter((e) => e.text === text);
    expect(events).toHaveLength(1);
    expect(events[0]?.id).toBe(retry.body.eventId);
  });

  it('answers an agent request with 503 and the retry is a fresh run', async () => {
    db.exec('BEGIN EXCLUSIVE');
    const refused = await gw.hook('agent', { message: 'run after the lock' });
    expectError(refused, 503, 'unavailable');
    db.exec('ROLLBACK');

    const retry = await gw.hook('agent', { message: 'run after the lock' });
    expect(retry.status).toBe(202);
    expect((await getRun(gw, retry.body.runId)).status).toBe('queued');
  });

  it('does not record the idempotency key of a refused request', async () => {
    const key = `unavailable-${Date.now()}`;
    const text = 'idempotent after 503';
    db.exec('BEGIN EXCLUSIVE');
    const refused = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expectError(refused, 503, 'unavailable');
    db.exec('ROLLBACK');

    const retry = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body.eventOutcome).toBe('queued');
    const replay = await gw.hook('wake', { text }, { 'idempotency-key': key });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.eventId).toBe(retry.body.eventId);
    expect((await listEvents(gw)).filter((e) => e.text === text)).toHaveLength(1);
  });

  it('keeps answering reads (health, admin API) while writes are locked', async () => {
    const before = await gw.hook('wake', { text: 'before the lock' });
    expect(before.status).toBe(200);
    db.exec('BEGIN EXCLUSIVE');
    const health = await fetch(`${gw.url}/healthz`);
    expect(health.status).toBe(200);
    const events = await listEvents(gw);
    expect(events.map((e) => e.id)).toContain(before.body.eventId);
    db.exec('ROLLBACK');
  });

  it('waits out a lock that is released within the busy timeout', async () => {
    const text = 'accepted once the short lock is gone';
    const { released } = await holdLock(join(gw.dir, 'state', 'agentgate.db'), 400);
    const started = Date.now();
    const answer = await gw.hook('wake', { text });
    expect(answer.status, answer.text).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    await released;
    expect((await listEvents(gw)).filter((e) => e.text === text)).toHaveLength(1);
  });
});
