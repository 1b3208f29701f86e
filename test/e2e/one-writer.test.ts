/**
 * One writer per SQLite file and private file modes (docs/operating.md, "The
 * SQLite file: one writer, file modes"), through the real CLI: a second
 * `agentgate run` on a database file a running gateway uses exits 1 before
 * listening, naming the file; `status` and `doctor` still work beside the
 * running one (all three in process: nothing there depends on a process of its
 * own); the lock dies with its process (`kill -9`), so the
 * next `run` starts; under umask 000 the gateway creates its state folder 0700
 * and the database, its -wal, -shm and lock files 0600, and leaves the modes of
 * what already exists alone.
 */
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningCli, runCli, startCli } from '../helpers/cli.js';
import { runCliInProcess, startCliInProcess } from '../helpers/cli-in-process.js';
import { HOOK_TOKEN, readAnswer, tempDir, writeConfig } from '../helpers/gateway.js';

let dir: string;
let file: string;
let db: string;
let port: number;
let running: RunningCli[];
let env: NodeJS.ProcessEnv;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeEach(async () => {
  dir = tempDir('agentgate-one-writer-');
  port = await freePort();
  file = writeConfig(dir, { gateway: { port } });
  db = join(dir, 'state', 'agentgate.db');
  running = [];
  env = { AGENTGATE_CONFIG: '', AGENTGATE_HOME: '', HOME: join(dir, 'home'), AGENTGATE_LOG_LEVEL: 'warn' };
});

afterEach(async () => {
  for (const cli of running) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
});

/** `agentgate run` on the test config; `--port 0` so that the port can never be what stops it. */
async function start(args: string[] = ['--port', '0']): Promise<RunningCli> {
  const cli = await startCli(['--config', file, ...args], env);
  running.push(cli);
  return cli;
}

/** A second `run` on the same config (same database), to completion. */
function secondRun() {
  return runCli(['run', '--config', file, '--port', '0'], env);
}

async function wake(url: string, text: string): Promise<number> {
  const response = await fetch(`${url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, mode: 'next-heartbeat' }),
  });
  return (await readAnswer(response)).status;
}

function expectRefused(result: Awaited<ReturnType<typeof secondRun>>): void {
  expect(result.code).toBe(1);
  expect(result.stdout).not.toMatch(/listening/);
  expect(result.stderr).toContain(
    `agentgate: cannot start: ${db} is in use by another running agentgate (it holds ${db}.lock)`,
  );
}

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('a second agentgate run on the same database file', () => {
  it('exits 1 before listening, naming the file; the first goes on serving', async () => {
    const first = await start();
    expect(await wake(first.url, 'before')).toBe(200);

    expectRefused(await secondRun());

    expect(await wake(first.url, 'after')).toBe(200);
    expect(first.child.exitCode).toBeNull();
  });

  it('leaves status and doctor working beside the running gateway', async () => {
    // On the configured port, where status and doctor look for it.
    const gateway = await startCliInProcess(['--config', file], env);
    onTestFinished(() => gateway.stop().then(() => undefined));
    const status = await runCliInProcess(['status', '--config', file], env);
    expect(status.stdout).toMatch(/^ready: +ok$/m);
    expect(status.code).toBe(0);

    const doctor = await runCliInProcess(['doctor', '--json', '--config', file], env);
    const checks = JSON.parse(doctor.stdout).checks as { name: string; status: string; message: string }[];
    const byName = Object.fromEntries(checks.map((check) => [check.name, check]));
    expect(byName.store?.status, byName.store?.message).toBe('ok');
    expect(byName.gateway?.status, byName.gateway?.message).toBe('ok');
    expect(doctor.code).toBe(0);
  });

  it('starts once the first was killed with SIGKILL: the lock dies with its process', async () => {
    const first = await start();
    expect(await wake(first.url, 'before the kill')).toBe(200);
    expect((await first.kill('SIGKILL')).signal).toBe('SIGKILL');

    const next = await start();
    expect(await wake(next.url, 'after the restart')).toBe(200);
    // …and it holds the lock in turn.
    expectRefused(await secondRun());
  });
});

describe('file modes', () => {
  /** Starts `run` with umask 000 (a forked worker: the child inherits this process's umask). */
  async function startUnderUmask0(): Promise<RunningCli> {
    const previous = process.umask(0);
    try {
      return await start();
    } finally {
      process.umask(previous);
    }
  }

  it('creates the state folder 0700 and the database, -wal, -shm and lock files 0600 under umask 000', async () => {
    const cli = await startUnderUmask0();
    expect(await wake(cli.url, 'written')).toBe(200);
    expect(readdirSync(join(dir, 'state')).sort()).toEqual([
      'agentgate.db',
      'agentgate.db-shm',
      'agentgate.db-wal',
      'agentgate.db.lock',
    ]);
    expect(modeOf(join(dir, 'state'))).toBe('700');
    for (const name of ['agentgate.db', 'agentgate.db-shm', 'agentgate.db-wal', 'agentgate.db.lock'])
      expect([name, modeOf(join(dir, 'state', name))]).toEqual([name, '600']);
  });

  it('leaves the modes of an existing folder and database alone (SQLite gives -wal and -shm the database’s)', async () => {
    mkdirSync(join(dir, 'state'), { mode: 0o750 });
    writeFileSync(db, '', { mode: 0o640 }); // an empty file is an empty database to SQLite
    const cli = await startUnderUmask0();
    expect(await wake(cli.url, 'written')).toBe(200);
    expect(modeOf(join(dir, 'state'))).toBe('750');
    expect(modeOf(db)).toBe('640');
    expect(modeOf(`${db}-wal`)).toBe('640');
    expect(modeOf(`${db}-shm`)).toBe('640');
    expect(modeOf(`${db}.lock`)).toBe('600'); // new: created by the gateway
  });
});
