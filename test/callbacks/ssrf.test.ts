/**
 * A callback never reaches the gateway's own API or a link-local/metadata
 * address, even when its origin is allowed (docs/callers.md, "SSRF rules"): the
 * address is checked where the connection is made, so a name that resolves
 * elsewhere on a later attempt (DNS rebinding) is caught, and redirects are not
 * followed. A refused target ends the callback as failed with no HTTP attempt
 * counted.
 */
import { randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/callbacks/send.js';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

interface Setup {
  gw: TestGateway;
  port: number;
  receiver: CallbackReceiver;
  clock: ManualClock;
  /** Posts a run with this callbackUrl and returns the run once its callback ended. */
  finish(
    body: Record<string, unknown>,
    hook?: string,
  ): Promise<{ callback: { status: string; attempts: number } }>;
}

async function setup(
  origins: (port: number, receiver: CallbackReceiver) => string[],
  mappings: (port: number) => unknown[] = () => [],
  resolve?: Resolver,
): Promise<Setup> {
  const receiver = await startCallbackReceiver();
  cleanup.push(() => receiver.close());
  const port = await freePort();
  const clock = new ManualClock(Date.now());
  const gw = await startTestGateway(
    {
      hooks: {
        callbacks: { secret: SECRET, allowedOrigins: origins(port, receiver) },
        mappings: mappings(port),
      },
    },
    { workers: true, port, callbacks: { clock, random: () => 0, resolve } },
  );
  cleanup.push(() => gw.stop());
  const view = async (runId: string) => (await gw.admin(`/api/runs/${runId}`)).body;
  return {
    gw,
    port,
    receiver,
    clock,
    async finish(body, hook = 'agent') {
      const answer = await gw.hook(hook, { message: 'm', deliver: false, ...body });
      expect(answer.status, answer.text).toBe(202);
      const runId = answer.body.runId as string;
      return waitFor(
        async () => {
          await clock.advance(Math.max(0, Date.now() - clock.now()) + 1000);
          const run = await view(runId);
          return ['delivered', 'failed'].includes(run.callback.status) && run;
        },
        `the callback of ${runId} to end`,
        15_000,
        50,
      );
    },
  };
}

describe('callback address guard', () => {
  it("refuses the gateway's own listener, by address and by a loopback name, even with its origin allowed", async () => {
    const s = await setup((port) => [
      `http://127.0.0.1:${port}`,
      `http://localhost:${port}`,
      `http://[::1]:${port}`,
    ]);
    for (const callbackUrl of [
      `http://127.0.0.1:${s.port}/api/runs`,
      `http://localhost:${s.port}/healthz`,
      `http://[::1]:${s.port}/api/runs`,
    ]) {
      const run = await s.finish({ callbackUrl });
      expect(run.callback, callbackUrl).toEqual({ status: 'failed', attempts: 0 });
    }
  });

  it("refuses link-local and metadata addresses, even as a mapping's callbackUrl", async () => {
    const targets = [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fe80::1]:8080/x',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/x',
    ];
    const s = await setup(
      () => [],
      () =>
        targets.map((callbackUrl, index) => ({ id: `m${index}`, match: { path: `m${index}` }, callbackUrl })),
    );
    for (const [index] of targets.entries()) {
      const run = await s.finish({}, `m${index}`);
      expect(run.callback, targets[index]).toEqual({ status: 'failed', attempts: 0 });
    }
  });

  it('checks the address at connect time: a name rebound to a metadata address between attempts is refused', async () => {
    let lookups = 0;
    const rebinding: Resolver = (hostname, callback) => {
      if (hostname !== 'hooks.rebind.test')
        return callback(Object.assign(new Error('nx'), { code: 'ENOTFOUND' }), []);
      lookups++;
      const address: LookupAddress =
        lookups === 1 ? { address: '127.0.0.1', family: 4 } : { address: '169.254.169.254', family: 4 };
      callback(null, [address]);
    };
    const s = await setup(
      (_port, receiver) => [`http://hooks.rebind.test:${receiver.port}`],
      undefined,
      rebinding,
    );
    s.receiver.answerNext({ status: 503 });
    const run = await s.finish({ callbackUrl: `http://hooks.rebind.test:${s.receiver.port}/cb` });
    // The first attempt reached the receiver (503); the retry resolved to the metadata address and was refused.
    expect(s.receiver.received).toHaveLength(1);
    expect(lookups).toBe(2);
    expect(run.callback).toEqual({ status: 'failed', attempts: 1 });
  });

  it("refuses a name with any address that is forbidden, and does not follow a redirect to the gateway's API", async () => {
    const mixed: Resolver = (_hostname, callback) =>
      callback(null, [
        { address: '127.0.0.1', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ]);
    const s = await setup(
      (_port, receiver) => [receiver.url, `http://mixed.test:${receiver.port}`],
      undefined,
      mixed,
    );
    const refused = await s.finish({ callbackUrl: `http://mixed.test:${s.receiver.port}/cb` });
    expect(refused.callback).toEqual({ status: 'failed', attempts: 0 });
    expect(s.receiver.received).toHaveLength(0);

    s.receiver.answerNext({ status: 307, headers: { location: `http://127.0.0.1:${s.port}/api/runs` } });
    const redirected = await s.finish({ callbackUrl: `${s.receiver.url}/cb` });
    expect(redirected.callback).toEqual({ status: 'failed', attempts: 1 });
    expect(s.receiver.received).toHaveLength(1);
  });
});
