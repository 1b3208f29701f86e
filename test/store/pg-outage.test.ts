/**
 * Losing PostgreSQL while running (docs/postgres.md, "Limits and what is per
 * replica"): the store is reached through a TCP relay this test can cut. While
 * cut, accepts and reads fail with StoreUnavailableError (the HTTP layer answers
 * 503 `unavailable`) and nothing is written; when the relay is back the same
 * store works again by itself.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { StoreUnavailableError } from '../../src/store/types.js';
import { createTestDatabase, PG_ADMIN_URL, PG_ENABLED } from './drivers.js';

/** A TCP relay to the PostgreSQL server that can be cut (every connection dropped) and restored. */
class Relay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    const target = new URL(PG_ADMIN_URL);
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve));
    const address = this.server.address();
    if (typeof address === 'object' && address) this.port = address.port;
  }

  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

const run = (id: string) => ({
  kind: 'agent' as const,
  run: {
    id,
    agentId: 'main',
    sessionKey: 'hook:outage',
    mainSessionKey: 'agent:main:main',
    name: null,
    message: 'm',
    model: null,
    thinking: null,
    timeoutSeconds: 60,
    wakeMode: 'now' as const,
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: false,
    source: 'hook:agent',
    createdAt: 1,
  },
});
const render = () => ({ status: 202, body: '{}' });

describe.runIf(PG_ENABLED)('PostgreSQL lost while running', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it('answers StoreUnavailableError while cut, writes nothing, and recovers by itself', async () => {
    const relay = new Relay();
    await relay.open();
    const url = new URL(database.url);
    url.port = String(relay.port);
    const store = new PgStore({ url: url.toString(), poolMax: 4, connectTimeoutMs: 1000 });
    try {
      expect((await store.accept([run('run_before')], render)).kind).toBe('committed');

      await relay.cut();
      await expect(store.accept([run('run_during')], render)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.getRun('run_before')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.runs.claimRuns('w', 1, 1000, 1)).rejects.toBeInstanceOf(StoreUnavailableError);

      await relay.open(); // the same port again
      const after = await store.accept([run('run_after')], render);
      expect(after.kind).toBe('committed');
      expect((await store.getRun('run_before'))?.status).toBe('queued');
      expect(await store.getRun('run_during')).toBeUndefined();
      expect((await store.getRun('run_after'))?.status).toBe('queued');
    } finally {
      await store.close();
      await relay.cut().catch(() => {});
    }
  });
});
