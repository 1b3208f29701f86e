// Requests/s of mapped hooks with a trivial transform, against the gateway started
// in this process (dist/, so run `npm run build` first). autocannon shares this
// process's CPU with the gateway: the figures are for comparing variants on the
// same machine, not absolute capacity.
//
//   node bench/transform-throughput.mjs [--duration 5] [--connections 32] [--rounds 3] [--compare <checkout>]
//
// Targets, measured in alternating rounds (median reported):
//   template  a mapping without a transform (the reference)
//   skip      a transform that returns null  → 204, nothing stored: the transform's own cost
//   wake      a transform that returns a wake → 200, committed to the store
//
// bench/transform-pools.mjs runs the same transform through this pool and through
// Piscina, directly (docs/performance.md, "Transform pool against Piscina").
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
    // Another checkout (built) measured in the same alternating rounds, e.g. the version
    // before a change: both share whatever else loads the machine.
    compare: { type: 'string' },
  },
});
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const TRANSFORM = `export default ({ payload }) => payload.skip ? null : { kind: 'wake', text: 'event ' + payload.n };`;

/** Starts the gateway of the checkout at `root` (its dist/) with a template and a transform mapping. */
async function startFrom(root) {
  const { loadConfigFile } = await import(join(root, 'dist/config/load.js'));
  const { createLogger } = await import(join(root, 'dist/log.js'));
  const { startGateway } = await import(join(root, 'dist/server/gateway.js'));
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-bench-transform-'));
  mkdirSync(join(dir, 'hooks', 'transforms'), { recursive: true });
  writeFileSync(join(dir, 'hooks', 'transforms', 'trivial.mjs'), TRANSFORM);
  writeFileSync(
    join(dir, 'agentgate.json5'),
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: `bench-admin-${'y'.repeat(40)}` } },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        mappings: [
          { id: 'template', match: { path: 'template' }, action: 'wake', textTemplate: 'event {{n}}' },
          { id: 'transform', match: { path: 'transform' }, transform: { module: 'trivial.mjs' } },
        ],
      },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    }),
    { mode: 0o600 },
  );
  const loaded = loadConfigFile(join(dir, 'agentgate.json5'), {});
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  const gateway = await startGateway(loaded.config, createLogger('silent'), {
    port: 0,
    workers: false,
    watchConfig: false,
  });
  return {
    url: gateway.url,
    async stop() {
      await gateway.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const checkouts = { this: new URL('..', import.meta.url).pathname };
if (values.compare) checkouts.compare = values.compare;
const gateways = {};
for (const [name, root] of Object.entries(checkouts)) gateways[name] = await startFrom(root);

const targets = {
  template: { path: '/hooks/template', body: (n) => ({ n }) },
  skip: { path: '/hooks/transform', body: (n) => ({ n, skip: true }) },
  wake: { path: '/hooks/transform', body: (n) => ({ n }) },
};

async function measure(url, target) {
  let n = 0;
  const result = await autocannon({
    url: `${url}${target.path}`,
    connections: Number(values.connections),
    duration: Number(values.duration),
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${HOOK_TOKEN}` },
        setupRequest: (request) => ({ ...request, body: JSON.stringify(target.body(++n)) }),
      },
    ],
  });
  return { rps: result.requests.average, p99: result.latency.p99, bad: result.non2xx + result.errors };
}

const samples = {};
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, target] of Object.entries(targets)) {
      // Alternate which checkout goes first, so neither always follows the other's load.
      const order = Object.entries(gateways);
      if (round % 2 === 1) order.reverse();
      for (const [checkout, gateway] of order) {
        const key = `${checkout} ${name}`;
        samples[key] ??= [];
        samples[key].push(await measure(gateway.url, target));
      }
    }
  }
} finally {
  for (const gateway of Object.values(gateways)) await gateway.stop();
}
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
for (const [key, list] of Object.entries(samples)) {
  const rps = list.map((s) => Math.round(s.rps));
  const p99 = median(list.map((s) => s.p99));
  const bad = list.reduce((sum, s) => sum + s.bad, 0);
  console.log(
    `${key.padEnd(17)} ${String(median(rps)).padStart(6)} req/s (rounds ${rps.join(', ')})  p99 ${p99} ms  non-2xx ${bad}`,
  );
}
