/**
 * Retention in a running gateway, over real HTTP (docs/operating.md
 * "Retention"): with short horizons a finished run is pruned by the background
 * engine — `GET /api/runs/{id}` and `GET {hooks_path}/runs/{id}` then answer
 * 404 `not_found` and the list no longer shows it — and
 * `agentgate_store_pruned_total{kind}` counts the runs and the events that went.
 * With `runs: "0"` nothing finished is ever deleted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HOOK_TOKEN, readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { expectError } from '../ingress/support.js';
import { parseExposition, seriesOf } from '../metrics/exposition.js';

const hookStatus = async (gw: TestGateway, runId: string) =>
  readAnswer(
    await fetch(`${gw.url}/hooks/runs/${runId}`, { headers: { authorization: `Bearer ${HOOK_TOKEN}` } }),
  );

async function pruned(gw: TestGateway): Promise<Record<string, number>> {
  const answer = await gw.admin('/metrics');
  return seriesOf(parseExposition(answer.text), 'agentgate_store_pruned_total');
}

/** Starts an agent run and waits for its answer (it has finished by then). */
async function finishedRun(gw: TestGateway): Promise<string> {
  const answer = await gw.hook('agent', { message: 'hello', deliver: false, waitForCompletion: true });
  expect(answer.status, answer.text).toBe(200);
  expect(answer.body.status).toBe('succeeded');
  return answer.body.runId;
}

describe('retention in a running gateway', () => {
  let gw: TestGateway;
  afterEach(() => gw?.stop());

  it('prunes a finished run: 404 not_found on both reads, gone from the list, counted by kind', async () => {
    gw = await startTestGateway(
      { store: { driver: 'sqlite', retention: { runs: '1s', events: '1s', every: '1s' } } },
      { workers: true },
    );
    const runId = await finishedRun(gw);
    expect((await gw.admin(`/api/runs/${runId}`)).status).toBe(200);
    expect((await hookStatus(gw, runId)).status).toBe(200);

    await waitFor(
      async () => (await gw.admin(`/api/runs/${runId}`)).status === 404,
      'the run to be pruned',
      10_000,
    );
    expectError(await gw.admin(`/api/runs/${runId}`), 404, 'not_found');
    expectError(await hookStatus(gw, runId), 404, 'not_found');
    expect((await gw.admin('/api/runs')).body.runs.map((run: { runId: string }) => run.runId)).not.toContain(
      runId,
    );
    // The run's summary event, consumed by the heartbeat it asked for, goes by the events horizon.
    const counted = await waitFor(async () => {
      const series = await pruned(gw);
      return (series['kind=events'] ?? 0) >= 1 && series;
    }, 'an event to be pruned');
    expect(counted['kind=runs']).toBe(1);
  });

  it('with runs: "0" keeps finished runs, however often it prunes', async () => {
    gw = await startTestGateway(
      { store: { driver: 'sqlite', retention: { runs: '0', events: '1s', every: '1s' } } },
      { workers: true },
    );
    const runId = await finishedRun(gw);
    // A check that nothing happens: with `every: '1s'`, 2.5 s holds two prune passes or more,
    // either of which would have taken the run had runs: "0" not kept it.
    await sleep(2500);
    expect((await gw.admin(`/api/runs/${runId}`)).status).toBe(200);
    expect((await pruned(gw))['kind=runs']).toBe(0);
  });
});
