/**
 * The WAL sync an answered change waits for on `synchronous: "full"`
 * (store/sqlite/wal-sync.ts): a waiter is covered only by a sync that started
 * after it asked, the waiters of a round share one sync, a failed sync fails
 * only its own waiters, and a replaced file is followed. With a real store: an
 * accept is answered only after a sync, and "normal" never syncs.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { WalSync } from '../../src/store/sqlite/wal-sync.js';
import { type Action, type Committed, StoreUnavailableError } from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';

let dir: string;
let walPath: string;
beforeEach(() => {
  dir = tempDir('agentgate-walsync-');
  walPath = join(dir, 'x.db-wal');
  writeFileSync(walPath, '');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A sync the test lets return, one at a time. */
function heldSyncs() {
  const started: { fd: number; finish: (error?: Error) => void }[] = [];
  const sync = (fd: number) =>
    new Promise<void>((resolve, reject) => {
      started.push({ fd, finish: (error) => (error ? reject(error) : resolve()) });
    });
  return { started, sync };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

const settled = async (promise: Promise<unknown>) => {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await turn();
  return done;
};

describe('WalSync', () => {
  it('covers a waiter only with a sync that started after it asked; one sync per round', async () => {
    const { started, sync } = heldSyncs();
    const wal = new WalSync(walPath, sync);
    // Asked in the same turn: one sync, started at the end of it.
    const first = Promise.all([wal.covered(), wal.covered()]);
    expect(started).toHaveLength(0);
    await turn();
    expect(started).toHaveLength(1);
    // Asked while the first sync runs: their commits may be newer than what it covers.
    const later = [wal.covered(), wal.covered(), wal.covered()];
    await turn();
    expect(started).toHaveLength(1);
    started[0]?.finish();
    await first;
    expect(await settled(later[0] as Promise<void>)).toBe(false);
    expect(started).toHaveLength(2); // the three share the next one
    started[1]?.finish();
    await Promise.all(later);
    expect(started).toHaveLength(2);
    await wal.close();
  });

  it('a failed sync rejects its own waiters only; the next round syncs again', async () => {
    const { started, sync } = heldSyncs();
    const wal = new WalSync(walPath, sync);
    const failing = wal.covered();
    await turn();
    const next = wal.covered();
    started[0]?.finish(new Error('EIO'));
    await expect(failing).rejects.toThrow('EIO');
    await turn();
    started[1]?.finish();
    await expect(next).resolves.toBeUndefined();
    await wal.close();
  });

  it('follows the file when it is replaced under the same name', async () => {
    const { started, sync } = heldSyncs();
    const wal = new WalSync(walPath, sync);
    const before = wal.covered();
    await turn();
    started[0]?.finish();
    await before;
    writeFileSync(`${walPath}.new`, 'x');
    renameSync(`${walPath}.new`, walPath);
    const after = wal.covered();
    await turn();
    expect(started[1]?.fd).not.toBe(started[0]?.fd);
    started[1]?.finish();
    await after;
    await wal.close();
    await expect(wal.covered()).rejects.toThrow('closed');
  });
});

describe('the SQLite store and the WAL sync', () => {
  const wake = (id: string): Action[] => [
    {
      kind: 'wake',
      event: { id, sessionKey: 'agent:main:main', text: id, source: 'hook:wake', ts: 1, wakeMode: 'now' },
    },
  ];
  const render = (committed: Committed[]) => ({ status: 200, body: JSON.stringify(committed) });

  it('on the default ("full"), accepts resolve only after a sync of the WAL, one for the batch', async () => {
    const { started, sync } = heldSyncs();
    const store = new SqliteStore({ path: join(dir, 'agentgate.db'), syncWal: sync });
    const accepts = Promise.all(['evt_a', 'evt_b', 'evt_c'].map((id) => store.accept(wake(id), render)));
    while (started.length === 0) await turn();
    // Committed (a read sees them) but not answered until the sync returns.
    expect((await store.listEvents('agent:main:main', { limit: 10 }))?.map((e) => e.id)).toEqual([
      'evt_a',
      'evt_b',
      'evt_c',
    ]);
    expect(await settled(accepts)).toBe(false);
    started[0]?.finish();
    expect((await accepts).map((r) => r.kind)).toEqual(['committed', 'committed', 'committed']);
    expect(started).toHaveLength(1);
    await store.close();
  });

  it('a failed sync answers StoreUnavailableError, never a commit', async () => {
    const { started, sync } = heldSyncs();
    const store = new SqliteStore({ path: join(dir, 'agentgate.db'), syncWal: sync });
    const accept = store.accept(wake('evt_a'), render);
    while (started.length === 0) await turn();
    started[0]?.finish(new Error('EIO'));
    await expect(accept).rejects.toBeInstanceOf(StoreUnavailableError);
    await store.close();
  });

  it('on "normal", nothing waits for a sync', async () => {
    const { started, sync } = heldSyncs();
    const store = new SqliteStore({ path: join(dir, 'agentgate.db'), synchronous: 'normal', syncWal: sync });
    await store.accept(wake('evt_a'), render);
    expect(started).toHaveLength(0);
    await store.close();
  });
});
