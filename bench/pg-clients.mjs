// pg (node-postgres) against postgres (porsager, postgres.js) on the statements
// agentgate's PostgreSQL store sends, to decide by measurement which client it
// should use. Measurement only: the store itself is not touched.
//
//   node bench/pg-clients.mjs [--url postgres://postgres@127.0.0.1:5432/postgres]
//                             [--rounds 3] [--seconds 5] [--notifications 1000] [--no-registry]
//
// It makes a database of its own on the server (dropped at the end, also on error
// or Ctrl-C) with tables shaped like agentgate's `runs` and `events`. Every sample
// opens its client's pool (10 connections), warms it for a second (postgres.js
// prepares its statements then), measures with 64 concurrent callers, and closes
// it, so at most one client holds connections at a time. The clients take turns
// within each round, the order rotating from round to round, so a busy neighbour
// on a shared machine moves both alike: the per-round ratios are the figures to read.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import postgres from 'postgres';
import { othersCpuWindow } from './machine-load.mjs';
import { median, range } from './stats.mjs';
import { pgDatabase } from './store-check.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    notifications: { type: 'string', default: '1000' },
    'no-registry': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const NOTIFICATIONS = Number(args.notifications);
const POOL = 10;
const CALLERS = 64;
const BATCH = 64;
const WARM_MS = 1000;
const READ_ROWS = 20_000;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

// ---------------------------------------------------------------- schema and rows

// The columns of agentgate's migration 1 that its accept path writes, plus the
// defaults and the indexes every insert maintains (src/store/postgres/migrations.ts).
const SCHEMA = `
  CREATE TABLE runs (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'queued', agent_id TEXT NOT NULL, session_key TEXT NOT NULL,
    main_session_key TEXT NOT NULL, name TEXT, message TEXT NOT NULL, model TEXT, thinking TEXT,
    timeout_seconds DOUBLE PRECISION NOT NULL, wake_mode TEXT NOT NULL, deliver BOOLEAN NOT NULL,
    channel TEXT NOT NULL, recipient TEXT, allow_unsafe BOOLEAN NOT NULL, source TEXT NOT NULL,
    created_at BIGINT NOT NULL, started_at BIGINT, finished_at BIGINT, reply TEXT, error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, lease_owner TEXT, lease_until BIGINT,
    delivery_status TEXT NOT NULL, delivery_channel TEXT, delivery_to TEXT, delivery_reason TEXT
  );
  CREATE INDEX runs_active ON runs (seq) WHERE status IN ('queued', 'running');
  CREATE INDEX runs_active_by_session ON runs (session_key, seq) WHERE status IN ('queued', 'running');
  CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
  -- the point reads go to a table of their own that the write workloads never touch
  CREATE TABLE runs_read (LIKE runs INCLUDING ALL);
  CREATE TABLE events (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    session_key TEXT NOT NULL, ts BIGINT NOT NULL, text TEXT NOT NULL, source TEXT NOT NULL,
    wake_mode TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', consumed_at BIGINT
  );
  CREATE INDEX events_by_session ON events (session_key, seq);
  CREATE INDEX events_pending ON events (session_key, seq) WHERE status = 'pending';`;

const COLUMNS = `id, agent_id, session_key, main_session_key, name, message, model, thinking,
  timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
  delivery_status, delivery_channel, delivery_to`;
const PLACEHOLDERS = Array.from({ length: 19 }, (_, i) => `$${i + 1}`).join(', ');
const INSERT_ONE = `INSERT INTO runs (${COLUMNS}) VALUES (${PLACEHOLDERS})`;

// agentgate's INSERT_RUNS (src/store/postgres/pg-store.ts), word for word but the table.
const insertBatchSql = (table) => `
  INSERT INTO ${table} (${COLUMNS})
  SELECT ${COLUMNS}
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                $8::text[], $9::float8[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::bool[],
                $15::text[], $16::int8[], $17::text[], $18::text[], $19::text[])
         WITH ORDINALITY AS t(${COLUMNS}, n)
   ORDER BY n
  RETURNING session_key, seq`;
const INSERT_BATCH = insertBatchSql('runs');
// Element type of each unnest column, for postgres.js's sql.array (it cannot tell a
// boolean[] from a boolean by itself: `cannot cast type boolean to boolean[]`).
const COLUMN_OIDS = [25, 25, 25, 25, 25, 25, 25, 25, 701, 25, 16, 25, 25, 16, 25, 20, 25, 25, 25];

const MESSAGE = 'Summarise the new ticket and propose a reply. '.repeat(5);
let sessionCounter = 0;

/** One run as agentgate's accept path writes it: the 19 values, in COLUMNS order. */
function runValues(id = randomUUID()) {
  const session = `hook:bench:${sessionCounter++ % 64}`;
  return [
    id,
    'main',
    session,
    'agent:main:main',
    'Bench',
    MESSAGE,
    null,
    null,
    120,
    'now',
    true,
    'last',
    null,
    false,
    'hook:agent',
    Date.now(),
    'pending',
    'last',
    null,
  ];
}

/** BATCH runs as the 19 column arrays agentgate's group commit binds. */
function batchColumns(ids) {
  const rows = ids.map((id) => runValues(id));
  return COLUMN_OIDS.map((_, c) => rows.map((row) => row[c]));
}

// ---------------------------------------------------------------- the clients

// Both clients parse BIGINT to a JS number, as agentgate's pool does (db.ts).
const INT8 = 20;
const pgTypes = {
  getTypeParser: (oid, format) => (oid === INT8 ? Number : pg.types.getTypeParser(oid, format)),
};
const pjTypes = { int8: { to: INT8, from: [INT8], serialize: (x) => String(x), parse: Number } };

/**
 * node-postgres the way src/store/postgres/db.ts uses it: unnamed statements, a
 * BEGIN/COMMIT per transaction. `named` prepares each statement once per
 * connection instead, to tell what postgres.js gains by preparing from what it
 * gains by pipelining.
 */
function pgClient(url, { named = false } = {}) {
  const q = (runner, name, text, values) =>
    named ? runner.query({ name, text, values }) : runner.query(text, values);
  const pool = new pg.Pool({
    connectionString: url,
    max: POOL,
    types: pgTypes,
    application_name: 'bench-pg',
  });
  pool.on('error', () => {});
  const tx = async (work) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  };
  return {
    insertOne: () => tx((c) => q(c, 'bench_insert_one', INSERT_ONE, runValues())),
    insertBatch: (ids) => tx((c) => q(c, 'bench_insert_batch', INSERT_BATCH, batchColumns(ids))),
    readOne: async (id) =>
      (await q(pool, 'bench_read', 'SELECT * FROM runs_read WHERE id = $1', [id])).rows[0],
    async listen(channel, onPayload) {
      const client = new pg.Client({ connectionString: url, application_name: 'bench-pg-listen' });
      await client.connect();
      client.on('notification', (message) => onPayload(message.payload));
      await client.query(`LISTEN ${channel}`);
      return () => client.end();
    },
    /** An event insert and its NOTIFY in one transaction; `beforeCommit` runs right before COMMIT is sent. */
    notifyTx: async (channel, payload, beforeCommit) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          'INSERT INTO events (id, session_key, ts, text, source, wake_mode) VALUES ($1, $2, $3, $4, $5, $6)',
          [randomUUID(), 'agent:main:main', Date.now(), 'bench', 'hook:wake', 'now'],
        );
        await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
        beforeCommit();
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    },
    end: () => pool.end(),
  };
}

/** postgres.js with the same pool size; `prepare: false` is what PgBouncer transaction mode needs. */
function pjClient(url, { prepare, maxPipeline = 100 }) {
  const sql = postgres(url, {
    max: POOL,
    prepare,
    max_pipeline: maxPipeline,
    types: pjTypes,
    onnotice: () => {},
    connection: { application_name: 'bench-postgresjs' },
  });
  return {
    insertOne: () =>
      sql.begin((tx) => {
        const [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s] = runValues();
        return tx`INSERT INTO runs (id, agent_id, session_key, main_session_key, name, message, model, thinking,
          timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
          delivery_status, delivery_channel, delivery_to)
          VALUES (${a}, ${b}, ${c}, ${d}, ${e}, ${f}, ${g}, ${h}, ${i}, ${j}, ${k}, ${l}, ${m}, ${n}, ${o}, ${p},
          ${q}, ${r}, ${s})`;
      }),
    // The same SQL text as pg's; sql.unsafe takes `prepare` per query (its default is false).
    insertBatch: (ids) =>
      sql.begin((tx) =>
        tx.unsafe(
          INSERT_BATCH,
          batchColumns(ids).map((column, c) => sql.array(column, COLUMN_OIDS[c])),
          { prepare },
        ),
      ),
    readOne: async (id) => (await sql`SELECT * FROM runs_read WHERE id = ${id}`)[0],
    async listen(channel, onPayload) {
      const { unlisten } = await sql.listen(channel, onPayload);
      return unlisten;
    },
    notifyTx: (channel, payload, beforeCommit) =>
      sql.begin(async (tx) => {
        await tx`INSERT INTO events (id, session_key, ts, text, source, wake_mode)
          VALUES (${randomUUID()}, ${'agent:main:main'}, ${Date.now()}, ${'bench'}, ${'hook:wake'}, ${'now'})`;
        await tx`SELECT pg_notify(${channel}, ${payload})`;
        beforeCommit(); // sql.begin sends COMMIT as soon as this callback resolves
      }),
    end: () => sql.end({ timeout: 5 }),
  };
}

const PG = { name: 'pg', make: (url) => pgClient(url) };
const PG_NAMED = { name: 'pg, named statements', make: (url) => pgClient(url, { named: true }) };
const PJ = { name: 'postgres, prepare: true', make: (url) => pjClient(url, { prepare: true }) };
const PJ_UNPREPARED = { name: 'postgres, prepare: false', make: (url) => pjClient(url, { prepare: false }) };
const PJ_NO_PIPELINE = {
  name: 'postgres, prepare: true, max_pipeline: 1',
  make: (url) => pjClient(url, { prepare: true, maxPipeline: 1 }),
};

// ---------------------------------------------------------------- the workloads

/** CALLERS loops calling `op` until the time is up; operations (or rows) done, and per second. */
async function throughput(op, ms, unitsPerOp = 1) {
  const started = performance.now();
  const deadline = started + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < deadline) {
        await op();
        done += 1;
      }
    }),
  );
  const units = done * unitsPerOp;
  return { units, rate: (units * 1000) / (performance.now() - started) };
}

/**
 * CPU ticks (1/100 s) the given PostgreSQL backends used so far. With the
 * client's own CPU time this gives a cost per operation on each side, which a
 * busy neighbour moves much less than it moves throughput.
 */
function backendTicks(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = text
        .slice(text.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
      ticks += fields[11] + fields[12]; // utime, stime
    } catch {
      // gone, or no /proc here
    }
  }
  return ticks;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/**
 * NOTIFY latency, ms from sending COMMIT to the listener's callback. All clients
 * are open at once, each listening on a channel of its own, and take turns one
 * notification at a time (the order rotating), so a neighbour's burst of load
 * falls on all of them alike instead of on whichever client's turn it was.
 */
async function notifyLatencies(specs, url, rounds, count, ourBackends) {
  const clients = specs.map((spec, k) => ({ spec, client: spec.make(url), channel: `agentgate_bench_${k}` }));
  const results = specs.map(() => []);
  try {
    for (const c of clients) c.unlisten = await c.client.listen(c.channel, (payload) => c.waiting?.(payload));
    const once = async (c, payload) => {
      let sentAt = 0;
      const seen = new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${c.spec.name}: notification not seen within 5 s`)),
          5000,
        );
        c.waiting = (got) => {
          if (got !== payload) return;
          clearTimeout(timer);
          resolve(performance.now());
        };
      });
      await c.client.notifyTx(c.channel, payload, () => {
        sentAt = performance.now();
      });
      return (await seen) - sentAt;
    };
    for (let i = 0; i < 50; i++) for (const c of clients) await once(c, `warm ${i}`);
    for (let round = 0; round < rounds; round++) {
      const window = othersCpuWindow(await ourBackends());
      const latencies = clients.map(() => []);
      for (let i = 0; i < count; i++) {
        for (let j = 0; j < clients.length; j++) {
          const k = (i + j) % clients.length;
          latencies[k].push(await once(clients[k], `${round} ${i}`));
        }
      }
      const others = window();
      for (const [k, values] of latencies.entries()) {
        values.sort((a, b) => a - b);
        const sample = { p50: quantile(values, 0.5), p95: quantile(values, 0.95), others };
        results[k].push(sample);
        console.error(
          `notify round ${round + 1} ${specs[k].name}: p50 ${sample.p50.toFixed(2)} ms, p95 ${sample.p95.toFixed(2)} ms, others ${others?.toFixed(0)} %`,
        );
      }
    }
  } finally {
    for (const c of clients) {
      await c.unlisten?.();
      await c.client.end();
    }
  }
  return Object.fromEntries(specs.map((spec, k) => [spec.name, results[k]]));
}

function readIds(count) {
  return Array.from({ length: count }, () => randomUUID());
}

const WORKLOADS = [
  {
    key: 'tx',
    title: '1. single-row transaction (BEGIN; INSERT run; COMMIT)',
    unit: 'tx/s',
    clients: [PG, PG_NAMED, PJ, PJ_UNPREPARED],
    before: (admin) => admin('TRUNCATE runs'),
    run: (client, ms) => throughput(() => client.insertOne(), ms),
  },
  {
    key: 'batch',
    title: `2. group commit: ${BATCH} runs per transaction via INSERT … SELECT FROM unnest`,
    unit: 'rows/s',
    clients: [PG, PG_NAMED, PJ, PJ_UNPREPARED],
    before: (admin) => admin('TRUNCATE runs'),
    run: (client, ms) => throughput(() => client.insertBatch(readIds(BATCH)), ms, BATCH),
  },
  {
    key: 'read',
    title: '3. point read by primary key (SELECT * … WHERE id = $1)',
    unit: 'reads/s',
    clients: [PG, PG_NAMED, PJ, PJ_UNPREPARED, PJ_NO_PIPELINE],
    run: (client, ms, ids) =>
      throughput(() => client.readOne(ids[Math.floor(Math.random() * ids.length)]), ms),
  },
];

// ---------------------------------------------------------------- package facts

/** The package and everything it pulls in (dependencies and installed optional ones), resolved as Node would. */
function closure(name, from = ROOT, seen = new Map()) {
  let dir = from;
  let found;
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) {
      found = candidate;
      break;
    }
    const parent = dirname(dir);
    if (parent === dir) return seen;
    dir = parent;
  }
  if (seen.has(found)) return seen;
  const manifest = JSON.parse(readFileSync(join(found, 'package.json'), 'utf8'));
  seen.set(found, manifest);
  for (const dep of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies }))
    closure(dep, found, seen);
  return seen;
}

function bytesOf(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') total += bytesOf(path);
    } else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

function registryTimes(name) {
  if (args['no-registry']) return undefined;
  try {
    const out = execFileSync('npm', ['view', name, 'time', '--json'], {
      encoding: 'utf8',
      timeout: 30_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return JSON.parse(out);
  } catch {
    return undefined;
  }
}

function packageFacts(name, typesPackage) {
  const packages = closure(name);
  const [[dir, manifest]] = packages;
  const ownBytes = bytesOf(dir);
  const allBytes = [...packages.keys()].reduce((sum, d) => sum + bytesOf(d), 0);
  const times = registryTimes(name);
  const latest = times?.[manifest.version];
  const releases = times ? Object.keys(times).filter((k) => k !== 'created' && k !== 'modified') : [];
  const lastYear = releases.filter((v) => Date.parse(times[v]) > Date.now() - 365 * 86400_000).length;
  const typed = manifest.types || manifest.typings || manifest.exports?.types;
  return {
    name,
    version: manifest.version,
    dependencies: packages.size - 1,
    dependencyNames: [...packages.values()].slice(1).map((m) => m.name),
    ownKiB: Math.round(ownBytes / 1024),
    withDepsKiB: Math.round(allBytes / 1024),
    latestRelease: latest?.slice(0, 10),
    releasesLastYear: times ? lastYear : undefined,
    types: typed ? `bundled (${typed})` : typesPackage ? `${typesPackage} (DefinitelyTyped)` : 'none',
  };
}

// ---------------------------------------------------------------- output

const fmt = (n, digits = 0) =>
  n
    .toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    .replace(/,/g, ' ');
const spread = (values, digits = 0) => {
  const { min, max } = range(values);
  return `${fmt(median(values), digits)} (${fmt(min, digits)}–${fmt(max, digits)})`;
};
const ratio = (values) => {
  const { min, max } = range(values);
  return `${median(values).toFixed(2)}× (${min.toFixed(2)}–${max.toFixed(2)})`;
};

// ---------------------------------------------------------------- main

async function main() {
  const name = `agentgate_clients_${randomBytes(4).toString('hex')}`;
  const database = pgDatabase(args.url, name);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await database.drop();
  };
  process.once('SIGINT', () => {
    drop().finally(() => process.exit(130));
  });

  await database.create();
  const adminPool = new pg.Pool({ connectionString: database.url, max: 1 });
  const admin = async (text, values) => (await adminPool.query(text, values)).rows;
  try {
    await admin(SCHEMA);
    const ids = readIds(READ_ROWS);
    for (let i = 0; i < ids.length; i += 1000) {
      await admin(insertBatchSql('runs_read'), batchColumns(ids.slice(i, i + 1000)));
    }
    await admin('VACUUM ANALYZE runs_read');
    const [{ server_version: serverVersion }] = await admin('SHOW server_version');
    const ourBackends = async () =>
      (await admin('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).map((r) => r.pid);

    console.error(
      `database ${name}; ${ROUNDS} rounds of ${SECONDS} s per client and workload, pool ${POOL}, ${CALLERS} callers`,
    );
    const results = {}; // workload key -> client name -> [per-round { value, others }]

    for (const workload of WORKLOADS) {
      results[workload.key] = Object.fromEntries(workload.clients.map((c) => [c.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        const order = workload.clients.map((_, i) => workload.clients[(i + round) % workload.clients.length]);
        for (const spec of order) {
          await workload.before?.(admin);
          const client = spec.make(database.url);
          try {
            await workload.run(client, WARM_MS, ids);
            const backends = await ourBackends();
            const window = othersCpuWindow(backends);
            const [clientBefore, serverBefore] = [process.cpuUsage(), backendTicks(backends)];
            const { rate: value, units } = await workload.run(client, SECONDS * 1000, ids);
            const others = window();
            const clientCpu = process.cpuUsage(clientBefore);
            const clientUs = (clientCpu.user + clientCpu.system) / units;
            const serverUs = ((backendTicks(backends) - serverBefore) * 10_000) / units;
            results[workload.key][spec.name].push({ value, others, clientUs, serverUs });
            console.error(
              `${workload.key} round ${round + 1} ${spec.name}: ${fmt(value)} ${workload.unit}, others ${others?.toFixed(0)} %`,
            );
          } finally {
            await client.end();
          }
        }
      }
    }

    const notify = await notifyLatencies(
      [PG, PJ, PJ_UNPREPARED],
      database.url,
      ROUNDS,
      NOTIFICATIONS,
      ourBackends,
    );

    // ---- report (markdown on stdout)
    const lines = [];
    lines.push(
      `Node ${process.version}, PostgreSQL ${serverVersion} on the same machine (${cpus().length} cores), pool ${POOL}, ` +
        `${CALLERS} concurrent callers, ${ROUNDS} interleaved rounds of ${SECONDS} s per client after 1 s warm-up; ` +
        `median (min–max) over rounds; ratio = pg ÷ postgres.js in the same round (>1: pg faster).`,
      '',
      "| workload | client | median (min–max) | pg ÷ this, per round | client CPU µs per unit | PostgreSQL CPU µs per unit | others' CPU % |",
      '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const workload of WORKLOADS) {
      const base = results[workload.key][PG.name].map((s) => s.value);
      for (const spec of workload.clients) {
        const samples = results[workload.key][spec.name];
        const values = samples.map((s) => s.value);
        const others = samples.map((s) => s.others).filter((v) => v !== null);
        lines.push(
          `| ${workload.title} | ${spec.name} | ${spread(values)} ${workload.unit} | ${
            spec === PG ? '—' : ratio(values.map((v, i) => base[i] / v))
          } | ${spread(
            samples.map((s) => s.clientUs),
            1,
          )} | ${spread(
            samples.map((s) => s.serverUs),
            1,
          )} | ${others.length ? spread(others) : 'n/a'} |`,
        );
      }
    }
    const basePg = notify[PG.name];
    for (const spec of [PG, PJ, PJ_UNPREPARED]) {
      const samples = notify[spec.name];
      const others = samples.map((s) => s.others).filter((v) => v !== null);
      lines.push(
        `| 4. NOTIFY in a committing transaction → listener callback, ${NOTIFICATIONS} per round and client, taking turns: p50 ms | ${spec.name} | ${spread(
          samples.map((s) => s.p50),
          2,
        )} | ${spec === PG ? '—' : ratio(samples.map((s, i) => basePg[i].p50 / s.p50))} | | | ${others.length ? spread(others) : 'n/a'} |`,
        `| 4. … p95 ms | ${spec.name} | ${spread(
          samples.map((s) => s.p95),
          2,
        )} | ${spec === PG ? '—' : ratio(samples.map((s, i) => basePg[i].p95 / s.p95))} | | | |`,
      );
    }
    lines.push('', '(For latency a ratio below 1 means pg is faster.)', '');

    const facts = [packageFacts('pg', '@types/pg'), packageFacts('postgres')];
    lines.push(
      '| package | version | dependencies (installed, transitive) | size on disk: own / with deps | latest release | releases in the last 12 months | TypeScript types |',
      '| --- | --- | ---: | ---: | --- | ---: | --- |',
    );
    for (const f of facts) {
      lines.push(
        `| ${f.name} | ${f.version} | ${f.dependencies} (${f.dependencyNames.join(', ') || '—'}) | ${f.ownKiB} KiB / ${f.withDepsKiB} KiB | ${
          f.latestRelease ?? 'n/a'
        } | ${f.releasesLastYear ?? 'n/a'} | ${f.types} |`,
      );
    }
    console.log(lines.join('\n'));
  } finally {
    await adminPool.end();
    await drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
