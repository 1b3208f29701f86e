/**
 * The operator's commands against a real running gateway (docs/operating.md,
 * "Command line"): `status`, `send wake|agent [--wait]`, `runs list|show|retry` (one run, or
 * every failed one with `--failed`),
 * with the address and tokens of the config resolved as `run` resolves it, and
 * a clear error when the gateway is not running. Tokens never appear in output.
 *
 * The gateways (`startCliInProcess`) and the commands (`runCliInProcess`) run in
 * process: none of it depends on a process of its own. `status` and `send agent
 * --wait` on a terminal spawn the bin.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../fakes/openai.js';
import { CLI, type CliResult, runCli } from '../helpers/cli.js';
import { type InProcessCli, runCliInProcess, startCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, baseConfig, HOOK_TOKEN, merge, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let configPath: string;
let port: number;
let gateway: InProcessCli;
let env: NodeJS.ProcessEnv;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function writeConfigAt(folder: string, config: Record<string, unknown>): string {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, 'agentgate.json5');
  writeFileSync(path, JSON.stringify(config, null, 2), { mode: 0o600 });
  return path;
}

beforeAll(async () => {
  dir = tempDir('agentgate-cli-ops-');
  port = await freePort();
  // `failing/agent` (a local command that exits 3) makes failed runs for `runs retry --failed`.
  const failing = fileURLToPath(new URL('../fixtures/agent-fail.mjs', import.meta.url));
  configPath = writeConfigAt(
    dir,
    merge(baseConfig(), {
      gateway: { port },
      models: { providers: { failing: { api: 'command', command: [process.execPath, failing] } } },
    }),
  );
  env = {
    AGENTGATE_CONFIG: '',
    AGENTGATE_HOME: '',
    HOME: join(dir, 'home'),
    OPENAI_API_KEY: '',
    ANTHROPIC_API_KEY: '',
    AGENTGATE_LOG_LEVEL: 'warn',
  };
  gateway = await startCliInProcess(['--config', configPath], env);
});

afterAll(async () => {
  await gateway?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs a command with the test config, in process unless `run` is `runCli` (the bin);
 * tokens must never be printed.
 */
async function cli(
  args: string[],
  run: (args: string[], env: NodeJS.ProcessEnv) => Promise<CliResult> = runCliInProcess,
) {
  const result = await run([...args, '--config', configPath], env);
  for (const token of [HOOK_TOKEN, ADMIN_TOKEN]) {
    expect(result.stdout).not.toContain(token);
    expect(result.stderr).not.toContain(token);
  }
  return result;
}

/** A finished run of the echo provider, through `send agent --wait`. */
async function finishedRun(message: string): Promise<string> {
  const result = await cli(['send', 'agent', message, '--name', 'CLI test', '--wait']);
  expect(result.code).toBe(0);
  const runId: string = JSON.parse(result.stdout).runId;
  // --wait answers once the run has finished; its delivery is settled by the delivery engine
  // right after, so wait for that too before reading the run's delivery.
  await waitFor(async () => {
    const shown = await cli(['runs', 'show', runId, '--json']);
    return JSON.parse(shown.stdout).delivery?.status !== 'pending';
  }, `the delivery of ${runId} to settle`);
  return runId;
}

describe('agentgate --help', () => {
  it('lists the operator commands and their subcommands', async () => {
    const help = await runCliInProcess(['--help'], env);
    for (const command of ['status', 'runs', 'send', 'doctor'])
      expect(help.stdout).toMatch(new RegExp(`^ +${command}\\b`, 'm'));
    const runs = await runCliInProcess(['runs', '--help'], env);
    for (const command of ['list', 'show', 'retry', 'redeliver'])
      expect(runs.stdout).toMatch(new RegExp(`^ +${command}\\b`, 'm'));
    const send = await runCliInProcess(['send', '--help'], env);
    for (const command of ['wake', 'agent']) expect(send.stdout).toMatch(new RegExp(`^ +${command}\\b`, 'm'));
  });
});

describe('agentgate status', () => {
  it('shows health, readiness and queue depth of the gateway the config names', async () => {
    const result = await cli(['status'], runCli);
    expect(result.stdout).toContain(`gateway:    http://127.0.0.1:${port}`);
    expect(result.stdout).toMatch(/^health: +ok$/m);
    expect(result.stdout).toMatch(/^ready: +ok$/m);
    expect(result.stdout).toMatch(/^runs: +\d+ queued, \d+ running$/m);
    expect(result.stdout).toMatch(/^deliveries: +\d+ pending$/m);
    expect(result.code).toBe(0);
  });

  it('--json', async () => {
    const result = await cli(['status', '--json']);
    const status = JSON.parse(result.stdout);
    expect(status).toMatchObject({ url: `http://127.0.0.1:${port}`, health: { ok: true } });
    expect(status.ready).toEqual({ ok: true });
    expect(status.queue).toEqual({
      queued: expect.any(Number),
      running: expect.any(Number),
      deliveriesPending: expect.any(Number),
    });
    expect(result.code).toBe(0);
  });

  it('finds the config through $AGENTGATE_CONFIG as run does', async () => {
    const result = await runCliInProcess(['status', '--json'], { ...env, AGENTGATE_CONFIG: configPath });
    expect(JSON.parse(result.stdout).url).toBe(`http://127.0.0.1:${port}`);
    expect(result.code).toBe(0);
  });
});

describe('agentgate send', () => {
  it('send wake prints the JSON answer', async () => {
    const result = await cli(['send', 'wake', 'deploy finished', '--mode', 'next-heartbeat']);
    expect(JSON.parse(result.stdout)).toMatchObject({
      ok: true,
      mode: 'next-heartbeat',
      eventId: expect.any(String),
      eventOutcome: expect.stringMatching(/^(queued|coalesced)$/),
    });
    expect(result.code).toBe(0);
  });

  it('send agent prints the accepted run id', async () => {
    const result = await cli(['send', 'agent', 'hello without waiting']);
    expect(JSON.parse(result.stdout)).toEqual({ ok: true, runId: expect.any(String) });
    expect(result.code).toBe(0);
  });

  it('send agent --wait prints the finished run with its reply', async () => {
    const result = await cli(['send', 'agent', 'ping from the CLI', '--wait']);
    const answer = JSON.parse(result.stdout);
    expect(answer).toMatchObject({ ok: true, runId: expect.any(String), status: 'succeeded', error: null });
    expect(answer.reply).toMatch(/^Echo: /);
    expect(answer.reply).toContain('ping from the CLI');
    // Not a terminal: no progress line.
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('an error answer is printed as JSON, named on stderr, and exits 1', async () => {
    const result = await cli(['send', 'agent', 'hi', '--session-key', 'hook:mine']);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, code: 'session_key_not_allowed' });
    expect(result.stderr).toMatch(
      /^agentgate: sessionKey: not accepted from requests .*\(session_key_not_allowed, HTTP 400\)$/m,
    );
    expect(result.code).toBe(1);
  });
});

describe('agentgate runs', () => {
  it('runs show: the run for people, and --json the API answer', async () => {
    const runId = await finishedRun('show me');
    const result = await cli(['runs', 'show', runId]);
    expect(result.stdout).toMatch(new RegExp(`^run: +${runId}$`, 'm'));
    expect(result.stdout).toMatch(/^status: +succeeded$/m);
    expect(result.stdout).toMatch(/^created: +\S+ \((just now|\d+(\.\d)?s ago)\)$/m);
    expect(result.stdout).toMatch(/^delivery: +skipped — no channel is configured$/m);
    expect(result.stdout).toMatch(/^source: +hook:agent$/m);
    // The hook token that accepted it: its id (docs/senders.md), `-` for none.
    expect(result.stdout).toMatch(/^token: +default$/m);
    expect(result.stdout).toMatch(/\nmessage:\n {2}show me\n/);
    expect(result.stdout).toMatch(/\nreply:\n {2}Echo: /);
    expect(result.code).toBe(0);

    const json = await cli(['runs', 'show', runId, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      runId,
      status: 'succeeded',
      delivery: { status: 'skipped', reason: 'no channel is configured' },
    });
  });

  it('runs show of an unknown id: the API sentence and exit 1', async () => {
    const result = await cli(['runs', 'show', 'no-such-run']);
    expect(result.stderr).toBe('agentgate: no run with id "no-such-run" (not_found, HTTP 404)\n');
    expect(result.stdout).toBe('');
    expect(result.code).toBe(1);
  });

  it('runs list: a table, newest first, filtered by status; --json the API answer', async () => {
    await finishedRun('an older run');
    const runId = await finishedRun('list me');
    const result = await cli(['runs', 'list', '--limit', '5']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^RUN +STATUS +SOURCE +TOKEN +NAME +CREATED +TOOK +DELIVERY$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${runId} +succeeded +hook:agent +default +CLI test +(just now|\\S+ ago) +\\S+ +skipped$`),
    );
    expect(lines.length).toBeLessThanOrEqual(6);

    // Paging: the next page's command is named on stderr, and it starts strictly older.
    const first = await cli(['runs', 'list', '--limit', '1']);
    const more = /^more: agentgate runs list --limit 1 --before (\S+)\n$/.exec(first.stderr);
    expect(more?.[1]).toBe(runId);
    const second = await cli(['runs', 'list', '--limit', '1', '--before', runId]);
    expect(second.stdout.split('\n')[1]).not.toContain(runId);
    expect(second.code).toBe(0);

    const failed = await cli(['runs', 'list', '--status', 'failed']);
    expect(failed.stdout).toBe('no failed runs\n');

    const json = JSON.parse((await cli(['runs', 'list', '--json', '--limit', '1'])).stdout);
    expect(json.runs).toHaveLength(1);
    expect(json.runs[0]).toMatchObject({ runId, status: 'succeeded', source: 'hook:agent' });
    // The list itself, replies whole (the table asks for the summaries, which have none).
    expect(typeof json.runs[0].reply).toBe('string');
    expect(json.runs[0]).not.toHaveProperty('replyExcerpt');
    expect(typeof json.next).toBe('string');
  }, 90_000);

  it('runs list refuses an unknown --status before asking', async () => {
    const result = await cli(['runs', 'list', '--status', 'done']);
    expect(result.stderr).toMatch(/--status <status>' argument 'done' is invalid/);
    expect(result.code).toBe(1);
  });

  it('runs list --token: only the runs of that hook token id, asked as ?tokenId=', async () => {
    await finishedRun('a run of the classic token');
    expect((await cli(['runs', 'list', '--limit', '1'])).stdout).toMatch(/^run_/m);
    const none = await cli(['runs', 'list', '--token', 'nobody']);
    expect(none.stdout).toBe('no runs with token nobody\n');
    expect(none.code, none.stderr).toBe(0);
    const failed = await cli(['runs', 'list', '--token', 'ci-bot', '--status', 'failed']);
    expect(failed.stdout).toBe('no failed runs with token ci-bot\n');
    const json = JSON.parse((await cli(['runs', 'list', '--token', 'nobody', '--json'])).stdout);
    expect(json).toEqual({ runs: [], next: null });
  });

  it('runs list --token refuses what is not a token id, and a token itself, before asking', async () => {
    const bad = await cli(['runs', 'list', '--token', 'CI Bot']);
    expect(bad.stderr).toBe(
      'agentgate: --token: "CI Bot" is not a hook token id (1-64 lowercase letters, digits, "-" or "_")\n',
    );
    expect(bad.code).toBe(1);
    // The secret would go into the request's URL: refused, and never printed (`cli` checks).
    for (const secret of [HOOK_TOKEN, ADMIN_TOKEN]) {
      const result = await cli(['runs', 'list', '--token', secret]);
      expect(result.stderr).toBe(
        'agentgate: --token takes the id of a hook token (hooks.tokens[].id, or "default" for hooks.token), not the token itself\n',
      );
      expect(result.stdout).toBe('');
      expect(result.code).toBe(1);
    }
  });

  it('runs retry: a new run with the same inputs', async () => {
    const runId = await finishedRun('retry me');
    const result = await cli(['runs', 'retry', runId]);
    expect(result.code, result.stderr).toBe(0);
    const match = new RegExp(`^run ${runId} retried as (\\S+)$`).exec(result.stdout.trim());
    expect(match).not.toBeNull();
    expect(match?.[1]).not.toBe(runId);
    expect(result.stderr).toBe(`follow it: agentgate runs show ${match?.[1]}\n`);

    const json = JSON.parse((await cli(['runs', 'retry', runId, '--json'])).stdout);
    expect(json).toMatchObject({ ok: true, runId: expect.any(String), retryOf: runId });
  });
});

describe('agentgate runs retry --failed', () => {
  const status = async (runId: string) =>
    JSON.parse((await cli(['runs', 'show', runId, '--json'])).stdout).status as string;

  it('counts with --dry-run, retries each failed run once, and a second time finds none', async () => {
    const failed: string[] = [];
    for (const message of ['fail one', 'fail two']) {
      const sent = await cli(['send', 'agent', message, '--model', 'failing/agent']);
      expect(sent.code, sent.stderr).toBe(0);
      failed.push(JSON.parse(sent.stdout).runId);
    }
    for (const runId of failed)
      await waitFor(async () => (await status(runId)) === 'failed', `${runId} to fail`);
    // The retries fail too (the same model): --until leaves them out of the second retry.
    const until = new Date(Date.now() + 1).toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));

    const dry = await cli(['runs', 'retry', '--failed', '--since', '1h', '--until', until, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toBe('2 failed runs to retry\n');
    for (const runId of failed) expect(await status(runId)).toBe('failed');

    const result = await cli(['runs', 'retry', '--failed', '--until', until]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe('2 failed runs matched, 2 retried');
    expect(lines[1]).toMatch(/^NEW RUN\s+RETRY OF$/);
    // Oldest finished first: the two may finish in either order, being in sessions of their own.
    expect(
      lines
        .slice(2)
        .map((line) => line.split(/\s+/)[1])
        .sort(),
    ).toEqual([...failed].sort());

    const again = JSON.parse(
      (await cli(['runs', 'retry', '--failed', '--timed-out', '--until', until, '--json'])).stdout,
    );
    expect(again).toEqual({ ok: true, matched: 0, retried: [] });
  });

  it('refuses a run id with --failed, and bulk options without --failed/--timed-out', async () => {
    const both = await cli(['runs', 'retry', 'run_x', '--failed']);
    expect(both.code).toBe(1);
    expect(both.stderr).toBe('agentgate: give a run id or --failed/--timed-out, not both\n');
    const neither = await cli(['runs', 'retry']);
    expect(neither.code).toBe(1);
    expect(neither.stderr).toContain('--failed');
    const stray = await cli(['runs', 'retry', 'run_x', '--dry-run']);
    expect(stray.stderr).toBe('agentgate: --dry-run goes with --failed or --timed-out, not with a run id\n');
    const since = await cli(['runs', 'retry', '--failed', '--since', 'yesterday']);
    expect(since.code).toBe(1);
    expect(since.stderr).toContain('--since: "yesterday" is neither a duration');
  });
});

describe('send agent --wait past hooks.maxWaitSeconds', () => {
  it('follows the run by polling until it finishes; --max-wait gives up with exit 1', {
    timeout: 90_000,
  }, async () => {
    const slow = await startFakeOpenAi({ delayMs: 2500, reply: () => 'slow answer' });
    const folder = join(dir, 'slow');
    const path = writeConfigAt(
      folder,
      merge(baseConfig(), {
        gateway: { port: await freePort() },
        hooks: { maxWaitSeconds: 1 },
        models: { providers: { slow: { api: 'openai-chat', baseUrl: slow.baseUrl } } },
        agents: { defaults: { model: 'slow/gpt-4o-mini' } },
      }),
    );
    const slowGateway = await startCliInProcess(['--config', path], env);
    try {
      // The gateway answers 202 after 1 s; the CLI then polls GET /api/runs/{id}.
      const result = await runCliInProcess(
        ['send', 'agent', 'take your time', '--wait', '--config', path],
        env,
      );
      expect(JSON.parse(result.stdout)).toMatchObject({
        ok: true,
        runId: expect.any(String),
        status: 'succeeded',
        reply: 'slow answer',
        error: null,
      });
      expect(result.code).toBe(0);
      // Not a terminal: no progress line.
      expect(result.stderr).toBe('');

      // On a terminal (util-linux `script` gives the CLI a pseudo-terminal), a waiting line on stderr.
      if (existsSync('/usr/bin/script')) {
        const command = `${process.execPath} ${CLI} send agent 'on a terminal' --wait --config ${path}`;
        const tty = await new Promise<string>((resolve, reject) =>
          execFile(
            '/usr/bin/script',
            ['-qec', command, '/dev/null'],
            { env: { ...process.env, ...env } },
            (error, stdout) => (error ? reject(error) : resolve(stdout)),
          ),
        );
        expect(tty).toMatch(/waiting for (the run to finish…|run run_\S+: (queued|running) \(\d)/);
        expect(tty).toContain('"reply": "slow answer"');
      }

      const impatient = await runCliInProcess(
        ['send', 'agent', 'too slow', '--wait', '--max-wait', '0.5', '--config', path],
        env,
      );
      const answer = JSON.parse(impatient.stdout);
      expect(answer.status).toMatch(/^(queued|running)$/);
      expect(impatient.stderr).toBe(
        `agentgate: run ${answer.runId} is still ${answer.status} after --max-wait; follow it: agentgate runs show ${answer.runId}\n`,
      );
      expect(impatient.code).toBe(1);
    } finally {
      await slowGateway.stop();
      await slow.close();
    }
  });
});

describe('the gateway is not running', () => {
  it('every command says so clearly and exits 1', async () => {
    const closed = await freePort();
    const folder = join(dir, 'stopped');
    const path = writeConfigAt(folder, merge(baseConfig(), { gateway: { port: closed } }));
    const expected = `agentgate: cannot reach the gateway at http://127.0.0.1:${closed}: connection refused — is \`agentgate run\` running?\n`;
    for (const args of [
      ['status'],
      ['runs', 'list'],
      ['send', 'wake', 'hi'],
      ['send', 'agent', 'hi', '--wait'],
    ]) {
      const result = await runCliInProcess([...args, '--config', path], env);
      expect(result.stderr, args.join(' ')).toBe(expected);
      expect(result.code, args.join(' ')).toBe(1);
    }
  });

  it('no config file: says where it looked', async () => {
    const result = await runCliInProcess(['status'], env);
    expect(result.stderr).toMatch(/^agentgate: no config file at .*home\/\.agentgate\/agentgate\.json5/);
    expect(result.code).toBe(1);
  });
});
