/**
 * Store conformance for attachments (docs/attachments.md), the same tests for every
 * driver (drivers.ts): the files are committed with their run in the accept's
 * transaction (and not at all when the accept commits nothing), read back in order
 * and byte for byte, shown on every view of the run, copied by a retry's accept, and
 * deleted by retention with their run — never while the run is unfinished.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Attachment, NewRun, RunCompletion, Store } from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const LEASE = 60_000;
let counter = 0;
const nextId = (prefix: string) => `${prefix}_at${String(++counter).padStart(6, '0')}`;

const file = (name: string, mediaType: string, data: Buffer): Attachment => ({
  name,
  mediaType,
  bytes: data.length,
  data,
});
const info = ({ name, mediaType, bytes }: Attachment) => ({ name, mediaType, bytes });

const PNG = file('dot.png', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]));
const PDF = file('a.pdf', 'application/pdf', Buffer.from('%PDF-1.4\n%%EOF\n'));
const TXT = file('notes.txt', 'text/plain', Buffer.from('ünïcode ✓'));

function agent(overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: nextId('run'),
    agentId: 'main',
    sessionKey: nextId('hook:at'),
    mainSessionKey: MAIN,
    name: null,
    message: 'm',
    model: null,
    thinking: null,
    timeoutSeconds: 600,
    wakeMode: 'now',
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: false,
    source: 'hook:agent',
    createdAt: T0,
    ...overrides,
  };
}

const render = () => ({ status: 202, body: '{}' });

function completion(run: NewRun): RunCompletion {
  return {
    runId: run.id,
    owner: 'worker',
    sessionKey: run.sessionKey,
    status: 'failed',
    reply: null,
    error: 'boom',
    finishedAt: T0 + 5000,
    transcript: [],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook: failed',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: T0 + 5000,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
  };
}

describe.each(DRIVERS)('Store conformance, attachments: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  const accept = async (run: NewRun) => {
    const result = await store.accept([{ kind: 'agent', run }], render);
    expect(result.kind).toBe('committed');
  };

  it('commits the files with the run and reads them back in order, byte for byte, on every view', async () => {
    const run = agent({ attachments: [PNG, PDF, TXT] });
    const plain = agent();
    await accept(run);
    await accept(plain);
    const expected = [info(PNG), info(PDF), info(TXT)];
    expect((await store.getRun(run.id))?.attachments).toEqual(expected);
    expect((await store.getRun(plain.id))?.attachments).toEqual([]);
    const page = await store.admin.listRuns({ limit: 10 });
    expect(page?.runs.find((r) => r.runId === run.id)?.attachments).toEqual(expected);
    expect(page?.runs.find((r) => r.runId === plain.id)?.attachments).toEqual([]);
    expect((await store.admin.getStoredRun(run.id))?.attachments).toEqual(expected);
    expect((await store.admin.getStoredRun(plain.id))?.attachments).toEqual([]);

    const claimed = await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    expect(claimed.find((c) => c.id === run.id)?.attachmentInfo).toEqual(expected);
    expect(claimed.find((c) => c.id === plain.id)?.attachmentInfo).toEqual([]);

    const loaded = await store.runs.loadAttachments(run.id);
    expect(loaded.map(info)).toEqual(expected);
    expect(
      loaded.map(
        (f) => Buffer.isBuffer(f.data) && f.data.equals([PNG, PDF, TXT][loaded.indexOf(f)]?.data as Buffer),
      ),
    ).toEqual([true, true, true]);
    expect(await store.runs.loadAttachments(plain.id)).toEqual([]);
    expect((await store.admin.getAttachment(run.id, 2))?.data.toString()).toBe('ünïcode ✓');
    expect(await store.admin.getAttachment(run.id, 3)).toBeUndefined();
    expect(await store.admin.getAttachment('run_nope', 0)).toBeUndefined();
  });

  it('keeps large files and empty files intact', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    const run = agent({
      attachments: [
        file('big.pdf', 'application/pdf', big),
        file('empty.txt', 'text/plain', Buffer.alloc(0)),
      ],
    });
    await accept(run);
    const [loadedBig, loadedEmpty] = await store.runs.loadAttachments(run.id);
    expect(loadedBig?.data.equals(big)).toBe(true);
    expect(loadedEmpty?.data.length).toBe(0);
    expect(loadedEmpty?.bytes).toBe(0);
  });

  it('accepts committed together (one group commit) keep their own files', async () => {
    const runs = [agent({ attachments: [PNG] }), agent(), agent({ attachments: [TXT, PDF] })];
    await Promise.all(runs.map((run) => store.accept([{ kind: 'agent', run }], render)));
    expect((await store.runs.loadAttachments(runs[0]?.id as string)).map(info)).toEqual([info(PNG)]);
    expect(await store.runs.loadAttachments(runs[1]?.id as string)).toEqual([]);
    expect((await store.runs.loadAttachments(runs[2]?.id as string)).map(info)).toEqual([
      info(TXT),
      info(PDF),
    ]);
  });

  it('an accept that commits nothing (idempotency replay or conflict) stores no files', async () => {
    const claim = (bodyHash: string) => ({
      scope: '/hooks/agent',
      key: 'k1',
      bodyHash,
      now: T0,
      ttlMs: 86_400_000,
    });
    const first = agent({ attachments: [PNG] });
    await store.accept([{ kind: 'agent', run: first }], render, claim('h1'));
    const replay = agent({ attachments: [PDF] });
    expect((await store.accept([{ kind: 'agent', run: replay }], render, claim('h1'))).kind).toBe('replay');
    const conflict = agent({ attachments: [TXT] });
    expect((await store.accept([{ kind: 'agent', run: conflict }], render, claim('h2'))).kind).toBe(
      'conflict',
    );
    expect(await store.runs.loadAttachments(replay.id)).toEqual([]);
    expect(await store.runs.loadAttachments(conflict.id)).toEqual([]);
    expect(await store.getRun(replay.id)).toBeUndefined();
  });

  it('a retry’s accept copies the files of the run it names', async () => {
    const original = agent({ attachments: [PNG, TXT] });
    await accept(original);
    const retry = agent({
      retryOf: original.id,
      attachmentsFrom: { runId: original.id, list: [info(PNG), info(TXT)] },
    });
    await accept(retry);
    expect((await store.getRun(retry.id))?.attachments).toEqual([info(PNG), info(TXT)]);
    const copied = await store.runs.loadAttachments(retry.id);
    expect(copied[0]?.data.equals(PNG.data)).toBe(true);
    expect(copied[1]?.data.equals(TXT.data)).toBe(true);
  });

  it('retention deletes a finished run’s files with it, and never an unfinished run’s', async () => {
    const done = agent({ attachments: [PNG, PDF] });
    const queued = agent({ attachments: [TXT], createdAt: T0 - 86_400_000 });
    await accept(done);
    const claimed = await store.runs.claimRuns('worker', T0 + 1000, LEASE, 1);
    expect(claimed.map((c) => c.id)).toEqual([done.id]);
    await accept(queued);
    expect(await store.runs.completeRun(completion(done))).toBe(true);

    const batch = await store.pruneBatch('runs', T0 + 3_600_000, 100);
    expect(batch.deleted).toBe(1);
    expect(await store.getRun(done.id)).toBeUndefined();
    expect(await store.runs.loadAttachments(done.id)).toEqual([]);
    expect(await store.admin.getAttachment(done.id, 0)).toBeUndefined();
    expect((await store.runs.loadAttachments(queued.id)).map(info)).toEqual([info(TXT)]);
  });
});
