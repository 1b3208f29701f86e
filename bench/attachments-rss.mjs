// Peak memory of a gateway taking large attachments (docs/attachments.md, "Memory"):
// starts the real gateway (dist/, through its CLI) on a new SQLite store, warms it up,
// then sends N concurrent POST /hooks/agent requests each carrying one M MiB file
// (base64 in the JSON body, as callers send them) and reads the process's peak
// resident set (VmHWM in /proc/<pid>/status, the kernel's high-water mark, so no
// sampling can miss the peak). Reports the peak over the warm baseline, and that
// figure per upload as a multiple of the file's size: how many copies of a file the
// gateway holds at once on its way in. The runs execute with the echo provider, so
// the worker's read of the bytes is inside the measured window too.
//
//   node bench/attachments-rss.mjs [--uploads 20] [--mib 10] [--gateway-dir .] [--rounds 3]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    uploads: { type: 'string', default: '20' },
    mib: { type: 'string', default: '10' },
    'gateway-dir': { type: 'string', default: '.' },
    rounds: { type: 'string', default: '3' },
  },
});
const uploads = Number(values.uploads);
const fileBytes = Number(values.mib) * 1024 * 1024;
const gatewayDir = resolve(values['gateway-dir']);
const TOKEN = `bench-hook-${'x'.repeat(40)}`;

const kib = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
const memory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { peakMiB: kib(status, 'VmHWM') / 1024, rssMiB: kib(status, 'VmRSS') / 1024 };
};

async function startGateway(dir) {
  const config = join(dir, 'agentgate.json5');
  writeFileSync(
    config,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: `bench-admin-${'y'.repeat(40)}` } },
      // The body limit must hold the base64 of the file and the JSON around it.
      hooks: {
        enabled: true,
        token: TOKEN,
        maxBodyBytes: Math.ceil((fileBytes * 4) / 3) + 64 * 1024,
        attachments: { maxBytes: fileBytes },
      },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo', heartbeat: { every: '0' } } },
      store: { driver: 'sqlite', path: join(dir, 'agentgate.db') },
    }),
    { mode: 0o600 },
  );
  const child = spawn(process.execPath, [join(gatewayDir, 'dist/cli/main.js'), 'run', '--config', config], {
    env: { ...process.env, AGENTGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise((done, fail) => {
    let output = '';
    const onData = (chunk) => {
      output += chunk;
      const match = /agentgate listening on (\S+)/.exec(output);
      if (match) done(match[1]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => fail(new Error(`gateway exited (${code}):\n${output}`)));
  });
  return { child, url };
}

const post = (url, body) =>
  fetch(`${url}/hooks/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body,
  }).then(async (answer) => ({ status: answer.status, text: await answer.text() }));

async function round(index) {
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-rss-'));
  const { child, url } = await startGateway(dir);
  try {
    // Warm-up: the code paths (parsing, validation, the insert, a run) once with small files.
    for (let i = 0; i < 20; i++) {
      const small = JSON.stringify({
        message: 'warm-up',
        attachments: [
          { name: 'w.bin.pdf', mediaType: 'application/pdf', data: randomBytes(1024).toString('base64') },
        ],
      });
      const answer = await post(url, small);
      if (answer.status !== 202) throw new Error(`warm-up answered ${answer.status}: ${answer.text}`);
    }
    await new Promise((done) => setTimeout(done, 500));
    const before = memory(child.pid);
    // Each upload its own bytes (a shared string would be one copy for all of them).
    const bodies = Array.from({ length: uploads }, (_, i) =>
      JSON.stringify({
        message: `upload ${i}`,
        attachments: [
          {
            name: `f${i}.pdf`,
            mediaType: 'application/pdf',
            data: randomBytes(fileBytes).toString('base64'),
          },
        ],
      }),
    );
    const started = performance.now();
    const answers = await Promise.all(bodies.map((body) => post(url, body)));
    const seconds = (performance.now() - started) / 1000;
    const refused = answers.filter((a) => a.status !== 202);
    if (refused.length > 0)
      throw new Error(`${refused.length} uploads answered ${refused[0].status}: ${refused[0].text}`);
    // Let the runs (which read the bytes back) execute inside the window too.
    await new Promise((done) => setTimeout(done, 2000));
    const after = memory(child.pid);
    const grewMiB = after.peakMiB - before.rssMiB;
    const perUpload = (grewMiB * 1024 * 1024) / uploads / fileBytes;
    console.log(
      `round ${index + 1}: ${uploads} × ${values.mib} MiB in ${seconds.toFixed(2)} s; RSS before ${before.rssMiB.toFixed(0)} MiB, ` +
        `peak ${after.peakMiB.toFixed(0)} MiB (+${grewMiB.toFixed(0)} MiB = ${perUpload.toFixed(2)}× the file per upload)`,
    );
    return perUpload;
  } finally {
    child.kill('SIGTERM');
    await new Promise((done) => child.on('exit', done));
    rmSync(dir, { recursive: true, force: true });
  }
}

const figures = [];
for (let i = 0; i < Number(values.rounds); i++) figures.push(await round(i));
figures.sort((a, b) => a - b);
console.log(
  `peak growth per upload: median ${figures[Math.floor(figures.length / 2)].toFixed(2)}× the file ` +
    `(min ${figures[0].toFixed(2)}×, max ${figures.at(-1).toFixed(2)}×)`,
);
