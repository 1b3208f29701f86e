// The cost of the nesting bound of JSON bodies (src/util/json-depth.ts; docs/errors.md,
// "Nesting depth") on the hot path of every hook request, in this process without HTTP:
// nanoseconds per byte of the check on typical bodies of 100 B, 1 KB, 64 KB and 1 MiB, next
// to what the request pays anyway for the same body (utf8 decode, JSON.parse), and on
// hostile bodies (more `[`/`{` than the limit, so that the full pass runs). Uses dist/, so
// run `npm run build` first.
//
//   node bench/json-depth.mjs [--rounds 15] [--budget-ms 5]
//
// Each figure is the fastest of the rounds (the one least disturbed by other processes);
// a round repeats the call for about --budget-ms. The check runs at the gateway's limit.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { realisticText } from './bodies.mjs';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '15' }, 'budget-ms': { type: 'string', default: '5' } },
});
const ROUNDS = Number(values.rounds);
const BUDGET_NS = Number(values['budget-ms']) * 1e6;

const root = fileURLToPath(new URL('..', import.meta.url));
const { MAX_JSON_DEPTH, nestedDeeperThan } = await import(join(root, 'dist/util/json-depth.js'));

/** A GitHub-like workflow event: short keys and values, nesting to 5 levels. */
const event = (i) => ({
  action: 'completed',
  workflow_run: {
    id: 9_876_543_210 + i,
    name: 'CI',
    head_branch: 'main',
    head_sha: '3f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e',
    conclusion: 'failure',
    html_url: `https://github.com/acme/payments/actions/runs/${i}`,
    actor: { login: 'dev', id: 42, type: 'User', site_admin: false },
    pull_requests: [{ number: 7, head: { ref: 'feature/x', sha: 'abc123' }, base: { ref: 'main' } }],
  },
  repository: { full_name: 'acme/payments', private: true, topics: ['billing', 'payments'] },
  message: 'Build "failed" at C:\\ci\\run, see [log] {details}',
});

/** Events batched until the body reaches `size` bytes. */
function events(size) {
  const batch = [];
  let text = '';
  while (text.length < size) {
    batch.push(event(batch.length));
    text = JSON.stringify({ source: 'ci', events: batch });
  }
  return text;
}

/** Long text fields: a wake of the load benchmark's ~1 KB text, or many of them. */
const texts = (count) =>
  JSON.stringify(
    count === 1
      ? { text: realisticText('run-000000001'), mode: 'now' }
      : { items: Array.from({ length: count }, (_, i) => ({ id: i, text: realisticText(`run-${i}`) })) },
  );

const MIB = 1 << 20;
/** 65 empty arrays: more `[` than the limit, so the hostile bodies below get the full pass. */
const OPENERS = Array.from({ length: 65 }, () => '[]').join(',');
const hostile = (value) => `[${OPENERS},${JSON.stringify(value)}]`;
const bodies = {
  '100 B wake': JSON.stringify({
    text: 'Deploy of api-server finished: 3 pods ready, 0 restarts',
    mode: 'now',
  }),
  '1 KB wake (bench text)': texts(1),
  '1 KB event': events(1024),
  '64 KB events': events(64 * 1024),
  '64 KB texts': texts(70),
  '1 MiB events': events(MIB),
  '1 MiB texts': texts(1150),
  // Strings where finding the end costs most: escaped quotes every byte or every 16 (where
  // indexOf takes over), empty strings, backslashes.
  'hostile: \\" x 1 MiB': hostile('"'.repeat(MIB / 2)),
  'hostile: 16 B + \\"': hostile(`${'x'.repeat(16)}"`.repeat(MIB / 18)),
  'hostile: "" x 1 MiB': hostile(Array.from({ length: MIB / 3 }, () => '')),
  'hostile: \\\\ x 1 MiB': hostile('\\'.repeat(MIB / 2)),
  'refused: [ x 1 MiB': '['.repeat(MIB),
};

const variants = {
  check: (buffer) => nestedDeeperThan(buffer, MAX_JSON_DEPTH),
  decode: (buffer) => buffer.toString('utf8').length > 0,
  'JSON.parse': (_buffer, text) => {
    try {
      return JSON.parse(text) !== undefined;
    } catch {
      return false;
    }
  },
};

const best = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, body] of Object.entries(bodies)) {
    const buffer = Buffer.from(body);
    for (const [variant, fn] of Object.entries(variants)) {
      // Calibrate the repetitions to the budget on the first round.
      const key = `${name}|${variant}`;
      const reps = best[key]?.reps ?? Math.max(1, Math.round(BUDGET_NS / (buffer.length * 4)));
      const started = process.hrtime.bigint();
      for (let i = 0; i < reps; i++) fn(buffer, body);
      const nsPerByte = Number(process.hrtime.bigint() - started) / reps / buffer.length;
      const previous = best[key];
      best[key] = { reps, nsPerByte: Math.min(previous?.nsPerByte ?? Infinity, nsPerByte) };
    }
  }
}

const columns = Object.keys(variants);
console.log(`limit ${MAX_JSON_DEPTH} levels, Node ${process.version}, fastest of ${ROUNDS} rounds, ns/byte`);
console.log(
  `${'body'.padEnd(24)}${'bytes'.padStart(9)}${columns.map((c) => c.padStart(12)).join('')}${'check µs'.padStart(11)}`,
);
for (const [name, body] of Object.entries(bodies)) {
  const bytes = Buffer.byteLength(body);
  const cells = columns.map((c) => best[`${name}|${c}`].nsPerByte.toFixed(3).padStart(12)).join('');
  const micros = ((best[`${name}|check`].nsPerByte * bytes) / 1000).toFixed(2).padStart(11);
  console.log(`${name.padEnd(24)}${String(bytes).padStart(9)}${cells}${micros}`);
}
