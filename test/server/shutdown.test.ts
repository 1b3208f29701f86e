/**
 * Stopping with a request in flight on a kept-alive connection: the request
 * gets its answer, and the stop does not wait for that connection's keep-alive
 * timeout (72 s) once the answer is out.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { HOOK_TOKEN, startTestGateway, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const dir = tempDir('agentgate-shutdown-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** One character per call the transform has begun. */
const CALLS = join(dir, 'calls.txt');

/** A transform that takes a while, so the request is still in flight when the stop begins. */
const SLOW = `import { appendFileSync } from 'node:fs';
export default async () => {
  appendFileSync(${JSON.stringify(CALLS)}, '.');
  await new Promise((resolve) => setTimeout(resolve, 700));
  return { kind: 'wake', text: 'slow but answered' };
};`;

function post(url: string, agent: Agent): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { authorization: `Bearer ${HOOK_TOKEN}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

it('answers the request in flight and stops without waiting for its kept-alive connection', async () => {
  mkdirSync(join(dir, 'hooks', 'transforms'), { recursive: true });
  writeFileSync(join(dir, 'hooks', 'transforms', 'slow.mjs'), SLOW);
  const gw = await startTestGateway(
    { hooks: { mappings: [{ id: 'slow', match: { path: 'slow' }, transform: { module: 'slow.mjs' } }] } },
    { dir },
  );
  const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
  try {
    // Warm the connection and the transform's worker, so the next request reuses both.
    expect((await post(`${gw.url}/hooks/slow`, agent)).status).toBe(200);
    const inFlight = post(`${gw.url}/hooks/slow`, agent);
    await waitFor(
      () => readFileSync(CALLS, 'utf8').length === 2,
      'the second request to reach the transform',
    );
    const started = Date.now();
    await gw.stop();
    const stoppedAfter = Date.now() - started;
    expect((await inFlight).status).toBe(200);
    expect(stoppedAfter).toBeLessThan(5_000);
  } finally {
    agent.destroy();
  }
}, 20_000);
