// What one tool step costs the gateway: the CPU the gateway process spends on a run whose
// model calls one MCP tool, against the same run without tools, in the same rounds.
//
// Each case starts the built gateway through its CLI on a fresh SQLite store, with a
// Chat Completions endpoint on loopback (in this process) that answers at once and a
// stdio MCP server (bench/mcp-tool-server.mjs, on the SDK's server side) with one tool:
//   - `plain`: the agent has no tools; a run is one model call.
//   - `tool`:  the agent allows `bench.lookup`; the model asks for it on its first call and
//              answers on its second, so a run is one model step, one tool step and one
//              final model step (three step commits, one tools/call, two model calls).
// --runs runs are posted to /hooks/agent (--concurrency at a time, `deliver: false`, no
// heartbeats) and the window ends when the last has finished; the gateway's CPU (user +
// system, from /proc) over that window divided by the runs is its CPU per run. The MCP
// server's and the model's CPU are not the gateway's and are left out (the server's is
// reported beside it). A tool step's cost is `tool` − `plain`, per run.
//
//   node bench/tool-step.mjs [--rounds 3] [--runs 300] [--concurrency 16] [--gateway-dir <checkout>]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { serverCpuWindow } from './machine-load.mjs';
import { startServer, stopServer } from './processes.mjs';
import { median, range } from './stats.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    runs: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '16' },
    'gateway-dir': { type: 'string', default: '.' },
  },
});
const ROUNDS = Number(values.rounds);
const RUNS = Number(values.runs);
const CONCURRENCY = Number(values.concurrency);
const GATEWAY_DIR = resolve(values['gateway-dir']);
const TOOL_SERVER = fileURLToPath(new URL('./mcp-tool-server.mjs', import.meta.url));
const HOOK_TOKEN = 'bench-hook-token-0123456789abcdef';
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

/** A model that asks for `bench.lookup` once when offered it, and otherwise answers. */
async function startToolModel() {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const askedAlready = body.messages.some((message) => message.role === 'tool');
      const message =
        body.tools?.length && !askedAlready
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'bench__lookup', arguments: '{"id":7}' },
                },
              ],
            }
          : { role: 'assistant', content: 'done' };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-bench',
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(done);
      }),
  };
}

function writeConfig(path, modelUrl, withTools) {
  const agent = { id: 'main', default: true, ...(withTools ? { tools: { allow: ['bench.lookup'] } } : {}) };
  writeFileSync(
    path,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN },
      models: { providers: { bench: { api: 'openai-chat', baseUrl: modelUrl, apiKey: 'sk-bench' } } },
      agents: {
        defaults: { model: 'bench/m', maxConcurrent: CONCURRENCY, heartbeat: { every: '0' } },
        list: [agent],
      },
      tools: { servers: { bench: { transport: 'stdio', command: [process.execPath, TOOL_SERVER] } } },
    }),
    { mode: 0o600 },
  );
}

const post = (url, path, body, token) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/**
 * Waits until `count` runs have finished, read from the store's file (not through the
 * gateway, whose CPU is being measured); a run that did not succeed stops the bench.
 */
async function waitFinished(databasePath, count) {
  let db;
  for (;;) {
    try {
      db ??= new Database(databasePath, { readonly: true, fileMustExist: true });
      const row = db
        .prepare(
          "SELECT sum(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END) AS ok, sum(CASE WHEN status IN ('failed', 'timed_out') THEN 1 ELSE 0 END) AS bad FROM runs",
        )
        .get();
      if (row.bad > 0) throw new Error(`${row.bad} run(s) failed`);
      if (row.ok >= count) return db.close();
    } catch (error) {
      if (!/SQLITE_BUSY|does not exist|unable to open/.test(String(error))) throw error;
    }
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** The CPU seconds of a process's children (the MCP server), from /proc. */
function childrenCpu(pid) {
  let total = 0;
  for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)) {
    const text = readFileSync(`/proc/${child}/stat`, 'utf8');
    const fields = text
      .slice(text.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    total += (fields[11] + fields[12]) / 100;
  }
  return total;
}

async function measure(withTools, model) {
  const home = mkdtempSync(join(tmpdir(), 'agentgate-tool-step-'));
  const configPath = join(home, 'agentgate.json5');
  const databasePath = join(home, 'state', 'agentgate.db');
  writeConfig(configPath, model.url, withTools);
  const gateway = await startServer(
    process.execPath,
    [join(GATEWAY_DIR, 'dist/cli/main.js'), 'run', '--config', configPath, '--port', '0'],
    { env: { AGENTGATE_LOG_LEVEL: 'warn' }, pattern: /agentgate listening on (\S+)/ },
  );
  try {
    // One run first, outside the window: the MCP server's start is not a step's cost.
    await post(gateway.url, '/hooks/agent', { message: 'warm up', deliver: false }, HOOK_TOKEN);
    await waitFinished(databasePath, 1);
    const serverCpuBefore = withTools ? childrenCpu(gateway.child.pid) : 0;
    const cpu = serverCpuWindow([gateway.child.pid]);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < RUNS) {
          next++;
          const answer = await post(
            gateway.url,
            '/hooks/agent',
            { message: `look up item ${next}`, deliver: false, wakeMode: 'next-heartbeat' },
            HOOK_TOKEN,
          );
          if (answer.status !== 202)
            throw new Error(`hook answered ${answer.status}: ${await answer.text()}`);
          await answer.arrayBuffer().catch(() => {});
        }
      }),
    );
    await waitFinished(databasePath, RUNS + 1);
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = cpu();
    const serverCpu = withTools ? childrenCpu(gateway.child.pid) - serverCpuBefore : 0;
    return {
      cpuMsPerRun: (1000 * cpuSeconds) / RUNS,
      runsPerSecond: RUNS / seconds,
      serverCpuMsPerRun: (1000 * serverCpu) / RUNS,
    };
  } finally {
    await stopServer(gateway.child);
    rmSync(home, { recursive: true, force: true });
  }
}

const model = await startToolModel();
const samples = { plain: [], tool: [] };
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const kind of round % 2 ? ['plain', 'tool'] : ['tool', 'plain']) {
      const sample = await measure(kind === 'tool', model);
      samples[kind].push(sample);
      console.log(
        `round ${round} ${kind.padEnd(5)} ${sample.cpuMsPerRun.toFixed(3)} ms CPU/run, ${sample.runsPerSecond.toFixed(0)} runs/s` +
          (kind === 'tool' ? `, MCP server ${sample.serverCpuMsPerRun.toFixed(3)} ms CPU/run` : ''),
      );
    }
  }
} finally {
  await model.close();
}

const of = (kind, metric) => samples[kind].map((s) => s[metric]);
const show = (values, digits = 3) => {
  const { min, max } = range(values);
  return `${median(values).toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`;
};
const steps = samples.tool.map((s, i) => s.cpuMsPerRun - (samples.plain[i]?.cpuMsPerRun ?? 0));
console.log(`\nruns: ${RUNS} per case, ${CONCURRENCY} at a time, ${ROUNDS} round(s); median (min–max)`);
console.log(`gateway CPU per run without tools: ${show(of('plain', 'cpuMsPerRun'))} ms`);
console.log(`gateway CPU per run with one tool step: ${show(of('tool', 'cpuMsPerRun'))} ms`);
console.log(`one tool step, gateway CPU (with − without, per round): ${show(steps)} ms`);
console.log(`MCP server CPU per tool call: ${show(of('tool', 'serverCpuMsPerRun'))} ms`);
console.log(
  `runs/s without tools: ${show(of('plain', 'runsPerSecond'), 0)}, with: ${show(of('tool', 'runsPerSecond'), 0)}`,
);
