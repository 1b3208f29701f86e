import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lowDiskRoom, MIN_FREE_BYTES } from '../../src/store/sqlite/disk-room.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const dir = mkdtempSync(join(tmpdir(), 'agentgate-disk-room-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lowDiskRoom (the SQLite readiness probe)', () => {
  it('says nothing while the disk has the room', () => {
    expect(lowDiskRoom(join(dir, 'store.db'), 0)).toBeUndefined();
  });

  it('names the file, the free space and the minimum when it has less', () => {
    const problem = lowDiskRoom(join(dir, 'store.db'), Number.MAX_SAFE_INTEGER);
    expect(problem).toMatch(
      /^the disk holding .*store\.db has [\d.]+ MiB free, below the [\d.]+ MiB a commit may need$/,
    );
  });

  it('leaves an in-memory store and a filesystem that cannot say to the commit probe', () => {
    expect(lowDiskRoom(':memory:', Number.MAX_SAFE_INTEGER)).toBeUndefined();
    expect(lowDiskRoom(join(dir, 'no/such/dir/store.db'), Number.MAX_SAFE_INTEGER)).toBeUndefined();
  });

  it('the store probes with the default minimum', async () => {
    expect(MIN_FREE_BYTES).toBe(8 * 1024 * 1024);
    const store = new SqliteStore({ path: join(dir, 'probe.db') });
    try {
      await expect(store.admin.probeCommit(Date.now())).resolves.toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
