/**
 * GET /readyz (no auth; docs/operating.md, "Health and readiness"): 200
 * {"ok":true} once the store answers and can commit and the gateway's parts run;
 * 503 `unavailable` otherwise. On PostgreSQL the database is taken away through
 * a TCP relay this test cuts and restores: the gateway stays up, /readyz says
 * 503 while the database is gone and 200 again once it is back, by itself.
 * Writes are made to fail for real: on SQLite another connection holds the write
 * lock, on PostgreSQL the database turns read-only
 * (`default_transaction_read_only`, its sessions terminated); /readyz is 503
 * while they fail — at once after a refused hook, and by its own probe without
 * any hook traffic — and 200 again by itself once they can commit.
 * test/faults/store-faults.test.ts does the same with a full and a read-only
 * disk.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMIT_CHECK_INTERVAL_MS } from '../../src/server/commit-check.js';
import { registerReadiness } from '../../src/server/readiness.js';
import { readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { expectError } from '../ingress/support.js';
import { createTestDatabase, PG_ADMIN_URL, PG_ENABLED } from '../store/drivers.js';

/** A TCP relay to the PostgreSQL server: `cut` drops every connection and stops listening, `open` listens again on the same port. */
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

const readyz = async (url: string) => readAnswer(await fetch(`${url}/readyz`));

/** Waits until /readyz answers `status`; returns that answer. */
const readyzBecomes = (url: string, status: number) =>
  waitFor(async () => {
    const answer = await readyz(url);
    return answer.status === status ? answer : undefined;
  }, `/readyz to answer ${status}`);

/**
 * The same story on each engine while `failWrites` holds: a refused hook makes
 * /readyz 503 at once; with no hook traffic at all its own probe keeps it 503;
 * after `restoreWrites` it is 200 again by itself and a hook is accepted.
 */
async function readinessFollowsWrites(
  gw: TestGateway,
  failWrites: () => Promise<void> | void,
  restoreWrites: () => Promise<void> | void,
): Promise<void> {
  expect((await readyz(gw.url)).status).toBe(200);
  await failWrites();
  const refused = await gw.hook('wake', { text: 'refused while writes fail' });
  expectError(refused, 503, 'unavailable');
  // Told by the refused write: no need to wait for a probe.
  const told = await readyz(gw.url);
  expectError(told, 503, 'unavailable');
  expect(told.body.error).toContain('the store cannot commit');
  expect(told.headers.get('retry-after')).toBe('1');
  // No hook traffic from here on (a load balancer took the replica out): the probe finds it.
  // The refused write answers /readyz for COMMIT_CHECK_INTERVAL_MS; after that /readyz probes.
  const probed = await waitFor(async () => {
    const answer = await readyz(gw.url);
    return !String(answer.body?.error ?? '').includes('a write failed') && answer;
  }, `/readyz to answer from its own probe (after ${COMMIT_CHECK_INTERVAL_MS} ms)`);
  expectError(probed, 503, 'unavailable');
  expect(probed.body.error).toContain('the store cannot commit');
  expect(probed.body.error).not.toContain('a write failed');
  expect((await gw.admin('/healthz')).status).toBe(200); // alive, not ready
  await restoreWrites();
  const back = await readyzBecomes(gw.url, 200);
  expect(back.body).toEqual({ ok: true });
  expect((await gw.hook('wake', { text: 'accepted once writes succeed' })).status).toBe(200);
}

describe('GET /readyz on SQLite', () => {
  it('is 200 without any token once the gateway runs (workers on)', async () => {
    const gw = await startTestGateway({}, { workers: true });
    try {
      const answer = await readyz(gw.url);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual({ ok: true });
    } finally {
      await gw.stop();
    }
  });

  it('is 503 unavailable while the store does not answer, or a part is not running', async () => {
    const Fastify = (await import('fastify')).default;
    let running = true;
    let failing = false;
    let hanging = false;
    const app = Fastify();
    // As in the admin scope: answer schemas document, answers are sent as they are.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, _request, reply) => {
      reply.code(error.statusCode ?? 500).send({ ok: false, error: error.message, code: error.code });
    });
    registerReadiness(app, {
      isRunning: () => running,
      pingTimeoutMs: 200,
      store: {
        admin: {
          probeCommit: () => Promise.resolve(),
          ping: () =>
            hanging
              ? new Promise(() => {})
              : failing
                ? Promise.reject(new Error('disk I/O error'))
                : Promise.resolve(),
        },
      },
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      expect((await readyz(url)).status).toBe(200);
      failing = true;
      const failed = await readyz(url);
      expectError(failed, 503, 'unavailable');
      expect(failed.body.error).toContain('disk I/O error');
      failing = false;
      hanging = true;
      const slow = await readyz(url);
      expectError(slow, 503, 'unavailable');
      expect(slow.body.error).toContain('within 200 ms');
      hanging = false;
      running = false;
      expectError(await readyz(url), 503, 'unavailable');
      running = true;
      expect((await readyz(url)).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe('GET /readyz on SQLite while writes fail', () => {
  it('is 503 while another connection holds the write lock and 200 again once it lets go', async () => {
    const gw = await startTestGateway();
    const holder = new Database(join(gw.dir, 'state', 'agentgate.db'));
    try {
      await readinessFollowsWrites(
        gw,
        () => {
          holder.exec('BEGIN EXCLUSIVE');
        },
        () => {
          holder.exec('ROLLBACK');
        },
      );
    } finally {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
      await gw.stop();
    }
  }, 30_000);
});

describe.runIf(PG_ENABLED)('GET /readyz on PostgreSQL, the database going read-only', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  /** Sets the database's default for new sessions, then ends its sessions so the gateway's pool reconnects under it. */
  async function setReadOnly(on: boolean): Promise<void> {
    const name = new URL(database.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(
        on
          ? `ALTER DATABASE ${name} SET default_transaction_read_only = on`
          : `ALTER DATABASE ${name} RESET default_transaction_read_only`,
      );
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      );
    } finally {
      await admin.end();
    }
  }

  it('is 503 while the database refuses writes and 200 again once it takes them, without a restart', async () => {
    const gw = await startTestGateway(
      { store: { driver: 'postgres', url: database.url } },
      { workers: true },
    );
    try {
      await readinessFollowsWrites(
        gw,
        () => setReadOnly(true),
        () => setReadOnly(false),
      );
    } finally {
      await gw.stop();
      await setReadOnly(false).catch(() => {});
    }
  }, 60_000);
});

describe.runIf(PG_ENABLED)('GET /readyz on PostgreSQL, the database going away', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it('is 503 while the database is unreachable and 200 again once it is back, without a restart', async () => {
    const relay = new Relay();
    await relay.open();
    const url = new URL(database.url);
    url.port = String(relay.port);
    const gw = await startTestGateway(
      { store: { driver: 'postgres', url: url.toString() } },
      { workers: true },
    );
    try {
      expect((await readyz(gw.url)).status).toBe(200);
      await relay.cut();
      const down = await readyz(gw.url);
      expectError(down, 503, 'unavailable');
      expect(down.headers.get('retry-after')).toBe('1');
      expect((await gw.admin('/healthz')).status).toBe(200); // alive, not ready
      await relay.open();
      const back = await waitFor(async () => {
        const answer = await readyz(gw.url);
        return answer.status === 200 ? answer : undefined;
      }, '/readyz to be 200 again');
      expect(back.body).toEqual({ ok: true });
    } finally {
      await gw.stop();
      await relay.cut().catch(() => {});
    }
  }, 60_000);
});
