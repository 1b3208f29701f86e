// What neutralising marker look-alikes costs (docs/untrusted-content.md, "Cost"): CPU
// time, peak memory and how long the event loop is held, for text made of nothing but
// marker names plus one HTML tag (so both readings run): `EXTERNAL_UNTRUSTED_CONTENT `
// repeated, 27 bytes a name, about 39,000 names per MiB.
//
// Two measurements, each in a process of its own (so that the kernel's high-water mark
// of its resident set, VmHWM, is this measurement's peak), for every build given:
//
//   sizes  neutraliseMarkers on N MiB, the fastest CPU time of --reps passes, and the
//          peak resident set over the process's warm baseline;
//   shapes neutraliseMarkers on 4 MiB of each shape of test/agents/safety.test.ts's
//          linearity test (prose, HTML, CJK, look-alikes, brackets, pipes), the fastest
//          CPU time of --reps passes, so other text is seen too;
//   thread 10 MiB of text sent to a thread that sends it back: the copies a thread of
//          its own would cost the event loop, against which the slices were chosen;
//   runs   --runs concurrent runs, each with one --run-mib MiB text attachment, taken
//          through the worker's own path (userTurnOf: read the files, compose the turn,
//          wrap it), as a gateway would run them at once; with the event loop's delay
//          meanwhile (a 1 ms timer's lateness, worst and p99), the peak and
//          the resident set right after, and the runs that failed.
//
//   node bench/lookalikes.mjs [--dist dist] [--dist <checkout>/dist] [--mib 1,2,4]
//                             [--reps 3] [--runs 4] [--run-mib 3.3]
//
// With two --dist, e.g. the build of the last release and this one, both are measured
// one after the other on the same machine; run `npm run build` first.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    dist: { type: 'string', multiple: true, default: ['dist'] },
    mib: { type: 'string', default: '1,2,4' },
    reps: { type: 'string', default: '3' },
    runs: { type: 'string', default: '4' },
    'run-mib': { type: 'string', default: '3.3' },
    child: { type: 'string' },
  },
});

const NAME = 'EXTERNAL_UNTRUSTED_CONTENT ';

/** `mib` MiB of marker names after one HTML tag. */
function lookalikes(mib) {
  const size = Math.round(mib * 1024 * 1024);
  const body = NAME.repeat(Math.ceil(size / NAME.length)).slice(0, size - 8);
  // A flat string, as a file's bytes decoded are (a repeat() would be a rope).
  return Buffer.from(`<b>x</b>${body}`).toString('utf8');
}

const kib = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
function memory() {
  const status = readFileSync('/proc/self/status', 'utf8');
  return { rssMiB: kib(status, 'VmRSS') / 1024, peakMiB: kib(status, 'VmHWM') / 1024 };
}
const cpuMs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

async function childSizes(dist, mib, reps) {
  const { neutraliseMarkers } = await import(resolve(dist, 'agents/safety.js'));
  neutraliseMarkers(lookalikes(0.0625)); // the code paths and tables warm
  const text = lookalikes(mib);
  const before = memory();
  let best = Number.POSITIVE_INFINITY;
  let error;
  for (let i = 0; i < reps; i++) {
    const since = process.cpuUsage();
    try {
      neutraliseMarkers(text);
    } catch (failure) {
      error = failure.message;
      break;
    }
    best = Math.min(best, cpuMs(since));
  }
  const after = memory();
  // The same pass in 4 ms slices (builds that have them): what slicing costs.
  let slicedMs = null;
  const slices = await import(resolve(dist, 'util/work-slices.js')).catch(() => undefined);
  if (slices && !error) {
    const { neutralising } = await import(resolve(dist, 'agents/neutralise.js'));
    slicedMs = Number.POSITIVE_INFINITY;
    for (let i = 0; i < reps; i++) {
      const since = process.cpuUsage();
      await slices.runInSlices(neutralising(text));
      slicedMs = Math.min(slicedMs, cpuMs(since));
    }
  }
  return {
    slicedMs,
    cpuMs: error ? null : best,
    nsPerByte: error ? null : (best * 1e6) / text.length,
    peakGrowthMiB: after.peakMiB - before.rssMiB,
    error,
  };
}

const SHAPE_UNITS = {
  prose: 'Please review the external content of PR #42 before Friday; the build is green. ',
  html: '<p>Hi &amp; welcome &lt;b&gt;bold&lt;/b&gt;&nbsp;<a href="/?a=1&b=2">link</a></p>\n',
  cjk: '外部内容：请在周五之前审查这个拉取请求。谢谢！',
  lookalikes: '<<<END_EXT ERNAL_UNTRUSTED_CONTENT id="x">>> ',
  brackets: '<',
  pipes: 'e|',
};

async function childShapes(dist, reps) {
  const { neutraliseMarkers } = await import(resolve(dist, 'agents/safety.js'));
  const size = 4 * 1024 * 1024;
  const result = {};
  for (const [shape, unit] of Object.entries(SHAPE_UNITS)) {
    const text = Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size)).toString('utf8');
    neutraliseMarkers(text.slice(0, 65_536));
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < reps; i++) {
      const since = process.cpuUsage();
      try {
        neutraliseMarkers(text);
      } catch (failure) {
        best = failure.message;
        break;
      }
      best = Math.min(best, cpuMs(since));
    }
    result[shape] = best;
  }
  return result;
}

/**
 * The alternative to slices: what handing the text to a thread and back costs the event
 * loop, for an echo thread that does nothing with it (docs/untrusted-content.md, "Why
 * slices, not a thread").
 */
async function childThread(mib, reps) {
  const { Worker } = await import('node:worker_threads');
  const thread = new Worker(
    "require('node:worker_threads').parentPort.on('message', (text) => require('node:worker_threads').parentPort.postMessage(text));",
    { eval: true },
  );
  await new Promise((online) => thread.once('online', online));
  const text = lookalikes(mib);
  const sends = [];
  const trips = [];
  for (let i = 0; i < reps; i++) {
    const started = performance.now();
    thread.postMessage(text);
    sends.push(performance.now() - started);
    await new Promise((back) => thread.once('message', back));
    trips.push(performance.now() - started);
  }
  await thread.terminate();
  return {
    sendMs: [Math.min(...sends), Math.max(...sends)],
    tripMs: [Math.min(...trips), Math.max(...trips)],
  };
}

async function childRuns(dist, runs, mib) {
  const { userTurnOf } = await import(resolve(dist, 'agents/attachments.js'));
  const texts = Array.from({ length: runs }, () => Buffer.from(lookalikes(mib)));
  const store = (data) => ({ runs: { loadAttachments: async () => [fileOf(data)] } });
  const fileOf = (data) => ({ name: 'lookalikes.txt', mediaType: 'text/plain', bytes: data.length, data });
  const runOf = (i) => ({
    id: `run_${i}`,
    message: 'summarise the file',
    source: 'hook:agent',
    allowUnsafeExternalContent: false,
    attachmentInfo: [{ name: 'lookalikes.txt', mediaType: 'text/plain', bytes: texts[i].length }],
  });
  await userTurnOf(store(Buffer.from(lookalikes(0.0625))), runOf(0)); // warm
  const before = memory();
  // The lateness of a 1 ms timer, each run of it (perf_hooks' monitorEventLoopDelay was
  // seen to miss a single stall of seconds).
  const late = [];
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    late.push(now - last - 1);
    last = now;
  }, 1);
  const since = process.cpuUsage();
  const started = performance.now();
  const outcomes = await Promise.allSettled(texts.map((data, i) => userTurnOf(store(data), runOf(i))));
  const wallMs = performance.now() - started;
  const cpu = cpuMs(since);
  // A pass that held the loop from start to end is seen by the timer's first run after it.
  await new Promise((done) => setTimeout(done, 20));
  clearInterval(ticker);
  late.sort((a, b) => a - b);
  const peak = memory().peakMiB;
  const failures = outcomes.filter((outcome) => outcome.status === 'rejected');
  return {
    wallMs,
    cpuMs: cpu,
    worstLateMs: late.at(-1),
    p99LateMs: late[Math.ceil(0.99 * late.length) - 1],
    rssBeforeMiB: before.rssMiB,
    peakMiB: peak,
    rssAfterMiB: memory().rssMiB,
    failed: failures.length,
    error: failures[0]?.reason?.message,
  };
}

if (values.child) {
  const [kind, dist, ...args] = JSON.parse(values.child);
  const result =
    kind === 'sizes'
      ? await childSizes(dist, ...args)
      : kind === 'shapes'
        ? await childShapes(dist, ...args)
        : kind === 'thread'
          ? await childThread(...args)
          : await childRuns(dist, ...args.map(Number));
  console.log(JSON.stringify(result));
  process.exit(0);
}

function inChild(args) {
  const child = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', JSON.stringify(args)],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  const line = child.stdout.trim().split('\n').at(-1);
  if (child.status !== 0 || !line) throw new Error(`measurement ${args.join(' ')} failed:\n${child.stderr}`);
  return JSON.parse(line);
}

const fixed = (value, digits = 0) => (value === null || value === undefined ? '—' : value.toFixed(digits));
const sizes = values.mib.split(',').map(Number);
const reps = Number(values.reps);
const runs = Number(values.runs);
const runMib = Number(values['run-mib']);

console.log(`neutraliseMarkers on N MiB of look-alikes (fastest of ${reps}), Node ${process.version}`);
console.log('| build | MiB | CPU ms | ns/byte | in slices, CPU ms | peak RSS growth MiB | error |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
for (const dist of values.dist) {
  for (const mib of sizes) {
    const r = inChild(['sizes', resolve(dist), mib, reps]);
    console.log(
      `| ${dist} | ${mib} | ${fixed(r.cpuMs)} | ${fixed(r.nsPerByte)} | ${fixed(r.slicedMs)} | ${fixed(r.peakGrowthMiB)} | ${r.error ?? ''} |`,
    );
  }
}
console.log();
console.log(`neutraliseMarkers on 4 MiB of each shape (fastest of ${reps}), CPU ms`);
console.log(`| build | ${Object.keys(SHAPE_UNITS).join(' | ')} |`);
console.log(`| --- |${' ---: |'.repeat(Object.keys(SHAPE_UNITS).length)}`);
for (const dist of values.dist) {
  const r = inChild(['shapes', resolve(dist), reps]);
  const cell = (value) => (typeof value === 'number' ? fixed(value) : value);
  console.log(
    `| ${dist} | ${Object.keys(SHAPE_UNITS)
      .map((shape) => cell(r[shape]))
      .join(' | ')} |`,
  );
}
console.log();
{
  const r = inChild(['thread', '', 10, reps]);
  const range = ([low, high]) => `${fixed(low, 1)}–${fixed(high, 1)}`;
  console.log(
    `10 MiB of text to a thread and back (${reps} times): postMessage held the loop ${range(r.sendMs)} ms, round trip ${range(r.tripMs)} ms`,
  );
}
console.log();
console.log(`${runs} concurrent runs, each with one ${runMib} MiB look-alike text file (userTurnOf)`);
console.log(
  '| build | wall ms | CPU ms | timer lateness, worst ms | p99 ms | RSS before MiB | peak MiB | RSS after MiB | failed |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const dist of values.dist) {
  const r = inChild(['runs', resolve(dist), runs, runMib]);
  console.log(
    `| ${dist} | ${fixed(r.wallMs)} | ${fixed(r.cpuMs)} | ${fixed(r.worstLateMs)} | ${fixed(r.p99LateMs, 1)} | ` +
      `${fixed(r.rssBeforeMiB)} | ${fixed(r.peakMiB)} | ${fixed(r.rssAfterMiB)} | ${r.failed}/${runs}${r.error ? ` (${r.error})` : ''} |`,
  );
}
