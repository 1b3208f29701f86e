/**
 * The SQLite store's WAL checkpointer thread (src/store/sqlite/wal-checkpointer.ts):
 * under sustained writes at the pace of a loaded gateway the WAL stays bounded with
 * nothing lost, and the thread and its connection go away with the store. It runs only
 * while the gateway writes (src/store/sqlite/checkpoints-on-demand.ts).
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointsOnDemand } from '../../src/store/sqlite/checkpoints-on-demand.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { WalCheckpointer } from '../../src/store/sqlite/wal-checkpointer.js';
import type { Action, Committed } from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';

const MIB = 1024 * 1024;
/** The store gets the WAL started over from 8 MiB on and cuts its file back to 32 MiB (docs/operating.md). */
const WAL_BOUND = 32 * MIB;
const TEXT = 'x'.repeat(1000);

let dir: string;
let path: string;

beforeEach(() => {
  dir = tempDir('agentgate-walcheck-');
  path = join(dir, 'agentgate.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
function wakes(n: number): Action[] {
  return Array.from({ length: n }, () => {
    counter += 1;
    // Texts differ, so nothing coalesces: every wake is a row.
    const text = `${counter} ${TEXT}`;
    const event = { id: `evt_${counter}`, sessionKey: 'agent:main:main', text, source: 'hook:wake', ts: 1 };
    return { kind: 'wake', event: { ...event, wakeMode: 'now' } } satisfies Action;
  });
}
const render = (committed: Committed[]) => ({ status: 200, body: JSON.stringify(committed) });
const walSize = () => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

describe('the WAL checkpointer thread', () => {
  it('keeps the WAL bounded under sustained writes, and loses nothing', async () => {
    // "normal": each batch here awaits its answer before the next is sent, so on "full" the
    // loop would pace itself by the disk's syncs; what is tested is the WAL at this pace.
    const store = new SqliteStore({ path, synchronous: 'normal' });
    let accepted = 0;
    let largestWal = 0;
    // ~128 MB of events, 64 requests' worth at a time every few ms: about the pace of
    // the gateway under wrk (~25 MB/s), three times the old WAL size, sixteen times the restart size.
    const until = Date.now() + 20_000;
    while (accepted < 120_000 && Date.now() < until) {
      const batch = Array.from({ length: 64 }, () => store.accept(wakes(1), render));
      await Promise.all(batch);
      accepted += batch.length;
      if (accepted % 1280 === 0) largestWal = Math.max(largestWal, walSize());
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    // How many fit in the 20 s is the machine's speed (a loaded one got ~80,000); what is
    // guaranteed is that each accepted one is there and the WAL stayed within its bound.
    expect(largestWal).toBeGreaterThan(1 * MIB); // it was measured while in use
    expect(largestWal).toBeLessThanOrEqual(WAL_BOUND);
    await store.close();

    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT COUNT(*) AS n FROM events').get()).toEqual({ n: accepted });
    raw.close();
  }, 60_000);

  it('stops with the store: the thread exits and the store closes the last connection', async () => {
    const store = new SqliteStore({ path });
    await Promise.all(Array.from({ length: 200 }, () => store.accept(wakes(1), render)));
    await store.close();
    // SQLite removes the WAL when the last connection to the file closes: the thread's was closed first.
    expect(existsSync(`${path}-wal`)).toBe(false);
    // And the file is free for the next store at once.
    const next = new SqliteStore({ path });
    await next.close();
  });

  it('closes its connection and exits when stopped', async () => {
    const raw = new Database(path);
    raw.pragma('journal_mode = WAL');
    raw.exec('CREATE TABLE t (x TEXT)');
    const checkpointer = new WalCheckpointer({
      path,
      synchronous: 'NORMAL',
      intervalMs: 10,
      restartPages: 64,
    });
    expect(checkpointer.threadId).toBeGreaterThan(0);
    raw.pragma('wal_autocheckpoint = 0');
    const insert = raw.prepare('INSERT INTO t (x) VALUES (?)');
    for (let i = 0; i < 2000; i++) insert.run(TEXT);
    // The rows reach the database file with no checkpoint of this connection's.
    await expect.poll(() => statSync(path).size, { timeout: 5000 }).toBeGreaterThan(2000 * 1000);
    await checkpointer.stop();
    expect(checkpointer.threadId).toBe(-1); // the thread has exited
    expect(checkpointer.lastError).toBeUndefined();
    raw.close();
    expect(existsSync(`${path}-wal`)).toBe(false); // ours was the last connection
  });

  describe('on demand', () => {
    /** A WAL database written by `raw` alone, SQLite's own checkpoints off. */
    function rawDatabase() {
      const raw = new Database(path);
      raw.pragma('journal_mode = WAL');
      raw.pragma('wal_autocheckpoint = 0');
      raw.exec('CREATE TABLE t (x TEXT)');
      const changes = raw.prepare<[], number>('SELECT total_changes()').pluck();
      return {
        raw,
        insert: raw.prepare('INSERT INTO t (x) VALUES (?)'),
        writes: () => changes.get() as number,
      };
    }
    const onDemand = (writes: () => number) =>
      new CheckpointsOnDemand({
        path,
        synchronous: 'NORMAL',
        intervalMs: 10,
        restartPages: 64,
        writes,
        startBytes: 64 * 4096,
        lookMs: 20,
        idleLooks: 25,
      });

    it('starts the thread once the WAL holds startBytes, and stops it once the writes stop', async () => {
      const { raw, insert, writes } = rawDatabase();
      const checkpoints = onDemand(writes);
      for (let i = 0; i < 10; i++) insert.run(TEXT); // a few writes: a few pages of WAL
      await new Promise((resolve) => setTimeout(resolve, 200)); // ten looks
      expect(checkpoints.running).toBe(false);

      for (let i = 0; i < 2000; i++) insert.run(TEXT);
      await expect.poll(() => checkpoints.running, { timeout: 5000 }).toBe(true);
      // The thread copies the rows into the database file; this connection never checkpoints.
      await expect.poll(() => statSync(path).size, { timeout: 5000 }).toBeGreaterThan(2000 * 1000);
      expect(checkpoints.lastError).toBeUndefined();
      // 25 looks without a write once it runs: the thread is stopped, the WAL file emptied.
      await expect.poll(() => checkpoints.running, { timeout: 5000 }).toBe(false);
      await expect.poll(walSize, { timeout: 5000 }).toBe(0);

      insert.run(TEXT); // one write: no thread
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(checkpoints.running).toBe(false);
      for (let i = 0; i < 2000; i++) insert.run(TEXT); // and again a WAL's worth: started again
      await expect.poll(() => checkpoints.running, { timeout: 5000 }).toBe(true);
      await checkpoints.stop();
      expect(checkpoints.running).toBe(false);
      raw.close();
      expect(existsSync(`${path}-wal`)).toBe(false); // the thread's connection was closed first
      const check = new Database(path, { readonly: true });
      expect(check.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 4011 }); // nothing lost
      check.close();
    });

    it('starts the thread at once for a WAL left by a gateway that did not stop cleanly', async () => {
      const { raw, insert, writes } = rawDatabase();
      for (let i = 0; i < 2000; i++) insert.run(TEXT);
      const checkpoints = onDemand(writes);
      expect(checkpoints.running).toBe(true);
      await expect.poll(() => statSync(path).size, { timeout: 5000 }).toBeGreaterThan(2000 * 1000);
      await checkpoints.stop();
      raw.close();
    });
  });
});
