/**
 * A trace survives the process that started it (docs/tracing.md, "Across
 * restarts and replicas"), through the real CLI: a run is accepted with a
 * caller's `traceparent`, its model call hangs, and its gateway is killed with
 * SIGKILL. The run is then executed by another process — the same gateway
 * restarted on SQLite, or a second replica on the same PostgreSQL database
 * taking over the dead one's lease — and its run span, model call and the
 * model request's `traceparent` are still in the caller's trace, under the
 * hook request's span that the first process exported.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeOtlp, SPAN_KIND_CONSUMER, startFakeOtlp } from '../fakes/otlp.js';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { HOOK_TOKEN, tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const CALLER_SPAN = '00f067aa0ba902b7';

let otlp: FakeOtlp;
let llm: FakeOpenAi;
/** The first model call of each test never answers: its gateway is killed while it waits. */
let hold = true;

beforeAll(async () => {
  otlp = await startFakeOtlp();
  llm = await startFakeOpenAi({
    reply: async () => {
      if (hold) {
        hold = false;
        await new Promise(() => {});
      }
      return 'done after all';
    },
  });
});
afterAll(async () => {
  await Promise.all([otlp?.close(), llm?.close()]);
});

const running: RunningCli[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const cli of running.splice(0)) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(store: Record<string, unknown> | undefined, dir = tempDir('agentgate-trace-')) {
  dirs.push(dir);
  const config = writeConfig(dir, {
    ...(store ? { store } : {}),
    models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl } } },
    agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
  });
  const cli = await startCli(['--config', config, '--port', '0'], {
    AGENTGATE_CONFIG: '',
    AGENTGATE_HOME: '',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_BSP_SCHEDULE_DELAY: '20',
  });
  running.push(cli);
  return { cli, dir };
}

/** Accepts a run in a new trace on `cli`, and waits until its model call hangs there. */
async function acceptAndHang(
  cli: RunningCli,
): Promise<{ traceId: string; runId: string; serverSpan: string }> {
  hold = true;
  const calls = llm.requests.length;
  const traceId = randomBytes(16).toString('hex');
  const answer = await fetch(`${cli.url}/hooks/agent`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${HOOK_TOKEN}`,
      'content-type': 'application/json',
      traceparent: `00-${traceId}-${CALLER_SPAN}-01`,
    },
    body: JSON.stringify({ message: 'survive this', wakeMode: 'next-heartbeat' }),
  });
  expect(answer.status).toBe(202);
  const { runId } = (await answer.json()) as { runId: string };
  await waitFor(() => llm.requests.length > calls, 'the model call that hangs');
  const [server] = await otlp.waitForSpans((s) => s.traceId === traceId && s.name === 'POST /hooks/{name}');
  // The hanging call was already made inside the trace.
  expect(llm.requests.at(-1)?.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  return { traceId, runId, serverSpan: server?.spanId as string };
}

/** The run's second execution, as exported by whichever process made it. */
async function expectContinued(traceId: string, runId: string, serverSpan: string): Promise<void> {
  const [run] = await otlp.waitForSpans(
    (s) => s.traceId === traceId && s.name === 'agentgate.run' && s.attributes['agentgate.attempt'] === 2,
    1,
    30_000,
  );
  expect(run).toMatchObject({ kind: SPAN_KIND_CONSUMER, parentSpanId: serverSpan, status: { code: 0 } });
  expect(run?.attributes).toMatchObject({ 'agentgate.run_id': runId, 'agentgate.status': 'succeeded' });
  const [call] = await otlp.waitForSpans((s) => s.traceId === traceId && s.parentSpanId === run?.spanId);
  expect(call?.name).toBe('chat gpt-test');
  expect(llm.requests.at(-1)?.headers.traceparent).toBe(`00-${traceId}-${call?.spanId}-01`);
}

it('SQLite: the run resumed after kill -9 and a restart joins the trace of the request that queued it', async () => {
  const { cli, dir } = await start(undefined);
  const { traceId, runId, serverSpan } = await acceptAndHang(cli);
  await cli.kill('SIGKILL');
  await start(undefined, dir);
  await expectContinued(traceId, runId, serverSpan);
}, 60_000);

describe.runIf(PG_ENABLED)('PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('a run accepted on a replica killed with -9 joins its trace on the replica that takes it over', async () => {
    const store = { driver: 'postgres', url: database.url };
    const { cli: first } = await start(store);
    const { traceId, runId, serverSpan } = await acceptAndHang(first);
    await start(store);
    await first.kill('SIGKILL');
    // The dead replica's lease would run out within a minute; move it to the past instead.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query(`UPDATE runs SET lease_until = 0 WHERE id = $1`, [runId]);
    } finally {
      await client.end();
    }
    await expectContinued(traceId, runId, serverSpan);
  }, 60_000);
});
