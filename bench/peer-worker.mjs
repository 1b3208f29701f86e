// graphile-worker draining no-op jobs, for bench/drain.mjs (started by bench/peer.mjs
// under Node 24; graphile-worker is loaded from the bench cache, not the repository).
//
//   node peer-worker.mjs <graphile-worker install dir> <database url> <jobs> <concurrency> [queue] [settings json]
//
// Installs graphile-worker's schema, adds the jobs in one `add_jobs` call, starts a
// worker with the settings of graphile-worker's own performance page (a local queue of
// 500, completions batched with a 0 ms delay, Node's clock), and records the moment
// each job ran. When the last one ran and the jobs table is empty (every completion
// committed), it stops and prints one line: PEER_RESULT {json}.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [dir, connectionString, jobsText, concurrencyText, queue, overrides] = process.argv.slice(2);
const require = createRequire(join(dir, 'package.json'));
const { run, runMigrations, Logger } = require('graphile-worker');
const pg = require('pg');
const JOBS = Number(jobsText);
const CONCURRENCY = Number(concurrencyText);
const logger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// `{"$preset":"defaults"}` runs graphile-worker as it comes (no local queue, one
// completion per job), the way most deployments run it; otherwise the tuned settings.
const { $preset, ...extra } = JSON.parse(overrides || '{}');
const common = {
  connectionString,
  concurrentJobs: CONCURRENCY,
  maxPoolSize: Math.max(10, CONCURRENCY + 2),
  logger,
};
const tuned = {
  pollInterval: 2000,
  useNodeTime: true,
  localQueue: { size: 500 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
};
const settings = { ...common, ...($preset === 'defaults' ? {} : tuned), ...extra };

await runMigrations({ preset: { worker: settings } });
const pool = new pg.Pool({ connectionString, max: 1 });
const addStarted = performance.now();
await pool.query(
  `SELECT count(*) FROM graphile_worker.add_jobs(array(
     SELECT json_populate_record(null::graphile_worker.job_spec, json_build_object(
       'identifier', 'noop', 'payload', json_build_object('n', i), 'queue_name', $2::text))
     FROM generate_series(1, $1::int) AS i))`,
  [JOBS, queue || null],
);
const addSeconds = (performance.now() - addStarted) / 1000;

let done = 0;
let first;
let last;
let allRan;
const ran = new Promise((resolve) => {
  allRan = resolve;
});
const cpuBefore = process.cpuUsage();
const started = performance.now();
const runner = await run({
  preset: { worker: settings },
  noHandleSignals: true,
  taskList: {
    noop: async () => {
      const now = performance.now();
      first ??= now;
      last = now;
      if (++done === JOBS) allRan();
    },
  },
});
await ran;
const left = async () =>
  Number((await pool.query('SELECT count(*) AS n FROM graphile_worker.jobs')).rows[0].n);
while ((await left()) > 0) await sleep(5);
const drainedSeconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
await runner.stop();
await pool.end();
const result = {
  jobs: JOBS,
  queue: queue || null,
  ran: done,
  addPerSecond: JOBS / addSeconds,
  perSecond: (done - 1) / ((last - first) / 1000),
  drainedSeconds,
  cpuUsPerJob: (cpu.user + cpu.system) / done,
  settings: { ...settings, connectionString: undefined, logger: undefined },
};
process.stdout.write(`PEER_RESULT ${JSON.stringify(result)}\n`);
