/**
 * Two replicas of the real CLI on one PostgreSQL database (docs/postgres.md,
 * "What holds across replicas"): load spread over both, one killed with SIGKILL
 * in the middle of it while it holds a run. Every acknowledged id is then
 * readable on the survivor, every run finishes, and the killed replica's run is
 * taken over when its lease expires and its reply reaches the fake Telegram
 * exactly once. The lease lasts 60 s; rather than wait that out, the test moves
 * the dead replica's lease deadlines into the past, as the passing minute would
 * (the store's conformance suite checks that an expired lease is taken back).
 */
import { rmSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir, writeConfig } from '../helpers/gateway.js';
import type { Json } from '../helpers/loop-gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const BOT = '777:replica-test-token';
const CHAT = 4242;
const LOAD = 120;

describe.runIf(PG_ENABLED)('two replicas on one PostgreSQL database', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  const dirs: string[] = [];
  const replicas: RunningCli[] = [];
  /** Holds the first model call for the "hold" run until its replica is killed. */
  let heldCalls = 0;

  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeOpenAi({
      reply: async (body) => {
        const last = String(body.messages.at(-1)?.content ?? '');
        if (last.includes('hold the line') && heldCalls++ === 0) await new Promise(() => {});
        return last.includes('hold the line') ? 'held run done' : 'load run done';
      },
    });
    telegram = await startFakeTelegram({ token: BOT, chats: [CHAT] });
  });
  afterAll(async () => {
    for (const replica of replicas) await replica.kill('SIGKILL').catch(() => {});
    await llm?.close();
    await telegram?.close();
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  async function startReplica(): Promise<RunningCli> {
    const dir = tempDir('agentgate-replica-');
    dirs.push(dir);
    const config = writeConfig(dir, {
      store: { driver: 'postgres', url: database.url },
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
      agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
      channels: { telegram: { botToken: BOT, apiBaseUrl: telegram.url } },
    });
    const replica = await startCli(['--config', config, '--port', '0']);
    replicas.push(replica);
    return replica;
  }

  /** The pid in the run's lease owner (`host:pid:random`), read from the database. */
  async function leaseOwnerPid(runId: string): Promise<number> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT lease_owner FROM runs WHERE id = $1', [runId]);
      return Number(String(rows[0]?.lease_owner).split(':')[1]);
    } finally {
      await client.end();
    }
  }

  /** What a minute's wait does to a dead owner's leases: every one of them is now past. */
  async function expireLeasesOf(pid: number): Promise<number> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rowCount } = await client.query(
        `UPDATE runs SET lease_until = 0 WHERE status = 'running' AND lease_owner LIKE $1`,
        [`%:${pid}:%`],
      );
      return rowCount ?? 0;
    } finally {
      await client.end();
    }
  }

  const hook = async (replica: RunningCli, body: unknown) => {
    const response = await fetch(`${replica.url}/hooks/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };
  const run = async (replica: RunningCli, runId: string): Promise<Json> =>
    (
      await fetch(`${replica.url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json();

  it('both start at once; a killed replica loses no acknowledged work and its run completes once elsewhere', async () => {
    const [a, b] = await Promise.all([startReplica(), startReplica()]);
    if (!a || !b) throw new Error('replicas did not start');

    const held = await hook(a, {
      message: 'hold the line',
      sessionKey: 'hook:held',
      channel: 'telegram',
      to: String(CHAT),
      wakeMode: 'next-heartbeat',
    });
    expect(held.status).toBe(202);
    const heldId: string = held.body.runId;
    // One replica has claimed it and is waiting on the model.
    await waitFor(() => heldCalls === 1, 'the held run to reach the model');

    const acks: { runId: string; by: RunningCli }[] = [];
    const sends = Array.from({ length: LOAD }, async (_, i) => {
      const target = i % 2 === 0 ? a : b;
      const answer = await hook(target, {
        message: `load ${i}`,
        sessionKey: `hook:load-${i % 10}`,
        deliver: false,
        wakeMode: 'next-heartbeat',
      }).catch(() => undefined);
      if (answer?.status === 202) acks.push({ runId: answer.body.runId, by: target });
    });
    // Mid-load: whichever replica holds the run dies without any chance to clean up.
    const holderPid = await leaseOwnerPid(heldId);
    const holder = holderPid === b.child.pid ? b : a;
    const survivor = holder === a ? b : a;
    expect(holder.child.pid).toBe(holderPid);
    await Promise.race([Promise.all(sends.slice(0, LOAD / 2)), new Promise((r) => setTimeout(r, 50))]);
    await holder.kill('SIGKILL');
    expect(await expireLeasesOf(holderPid)).toBeGreaterThanOrEqual(1);
    await Promise.all(sends);
    // Every request to the survivor is acknowledged; how many the killed replica acknowledged
    // before its kill is up to the machine's speed, anything from none to all of its half.
    expect(acks.filter((ack) => ack.by === survivor)).toHaveLength(LOAD / 2);
    const acked = acks.map((ack) => ack.runId);

    for (const id of acked) expect((await run(survivor, id)).runId).toBe(id);
    const taken = await waitFor(
      async () => {
        const view = await run(survivor, heldId);
        return view.status === 'succeeded' && view.delivery.status === 'delivered' ? view : undefined;
      },
      'the held run to be taken over after its lease expired',
      30_000,
      250,
    );
    expect(taken.reply).toBe('held run done');
    expect(telegram.messagesFor(CHAT).map((m) => m.text)).toEqual(['held run done']);
    // Load runs the killed replica had claimed came back by the same lease expiry.
    await waitFor(
      async () => {
        for (const id of acked) if ((await run(survivor, id)).status !== 'succeeded') return false;
        return true;
      },
      'every acknowledged run to succeed',
      30_000,
      250,
    );
  }, 90_000);
});
