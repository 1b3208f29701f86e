// Preloaded into a gateway (node --import) by bench/agent-profile.mjs --sql-counts:
// counts every better-sqlite3 statement execution by its SQL text. SIGUSR2 marks
// the measured window's start and end; at exit the window's counts are written to
// $AGENTGATE_SQL_COUNTS as JSON.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(join(process.env.AGENTGATE_SQL_COUNTS_DIR, 'package.json'));
const Database = require('better-sqlite3');
const probe = new Database(':memory:');
const proto = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();
const counts = new Map();
let marks = [];
for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = proto[method];
  proto[method] = function (...args) {
    const key = `${method} ${this.source.replace(/\s+/g, ' ').slice(0, 140)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return original.apply(this, args);
  };
}
const execOriginal = Database.prototype.exec;
Database.prototype.exec = function (sql) {
  const key = `exec ${sql.replace(/\s+/g, ' ').slice(0, 140)}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  return execOriginal.call(this, sql);
};
process.on('SIGUSR2', () => {
  marks.push(new Map(counts));
});
process.on('exit', () => {
  const [from = new Map(), to = counts] = marks;
  const window = {};
  for (const [key, n] of to) if (n - (from.get(key) ?? 0) > 0) window[key] = n - (from.get(key) ?? 0);
  writeFileSync(process.env.AGENTGATE_SQL_COUNTS, JSON.stringify(window));
  marks = [];
});
