// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config files hold literal ${ENV} references
/**
 * The `agentgate` CLI (docs/cli.md, docs/configuration.md):
 * `config check`, `run` refusing an invalid config before listening, `--help`,
 * where the config file is looked for, the starter config and a clean
 * SIGTERM/SIGINT exit.
 *
 * Most commands run in process (`runCliInProcess`, `startCliInProcess`); what
 * depends on the real bin spawns it (`runCli`, `startCli`): `--help`,
 * `--version`, one `config check`, one refused `run`, the starter config's
 * file mode and the signals.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import JSON5 from 'json5';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningCli, runCli, startCli } from '../helpers/cli.js';
import { type InProcessCli, runCliInProcess, startCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, baseConfig, HOOK_TOKEN, merge, readAnswer, tempDir } from '../helpers/gateway.js';

let dir: string;
let running: RunningCli[];
let inProcess: InProcessCli[];

/** Keeps the child from reading the developer's own config or API keys. */
let isolated: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = tempDir('agentgate-cli-');
  running = [];
  inProcess = [];
  isolated = {
    AGENTGATE_CONFIG: '',
    AGENTGATE_HOME: '',
    HOME: join(dir, 'home'),
    OPENAI_API_KEY: '',
    ANTHROPIC_API_KEY: '',
    AGENTGATE_LOG_LEVEL: 'warn',
  };
});

afterEach(async () => {
  for (const cli of inProcess) await cli.stop();
  for (const cli of running) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
});

async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunningCli> {
  const cli = await startCli(args, { ...isolated, ...env });
  running.push(cli);
  return cli;
}

/** `agentgate run` in this process, for what does not depend on a process of its own. */
async function startHere(args: string[], env: NodeJS.ProcessEnv = {}): Promise<InProcessCli> {
  const cli = await startCliInProcess(args, { ...isolated, ...env });
  inProcess.push(cli);
  return cli;
}

/** Writes a config (merged over the helpers' base config unless `raw`) into `folder`. */
function writeConfigIn(
  folder: string,
  override: Record<string, unknown> = {},
  raw = false,
  name = 'agentgate.json5',
) {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, name);
  writeFileSync(path, JSON.stringify(raw ? override : merge(baseConfig(), override), null, 2), {
    mode: 0o600,
  });
  return path;
}

function post(url: string, path: string, token: string, body: unknown) {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(readAnswer);
}

const lines = (text: string) => text.split('\n').map((line) => line.trimEnd());

describe('agentgate --help', () => {
  it('lists the run and config commands', async () => {
    const result = await runCli(['--help'], isolated);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\s+run\b/m);
    expect(result.stdout).toMatch(/^\s+config\b/m);
  });

  it('--version prints the version', async () => {
    const result = await runCli(['--version'], isolated);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('0.1.0\n');
  });

  it('config --help lists check', async () => {
    const result = await runCliInProcess(['config', '--help'], isolated);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\s+check\b/m);
  });
});

describe('agentgate config check', () => {
  it('exits 0 and prints ok for a valid file', async () => {
    const file = writeConfigIn(dir);
    const result = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`${file}: ok`);
    expect(result.stderr).toBe('');
  });

  it('exits 1 with every problem on stderr, one per line', async () => {
    const file = writeConfigIn(
      dir,
      {
        gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
        hooks: { enabled: true, path: '/', defaultSessionKey: 'x', allowedSessionKeyPrefixes: ['hook:'] },
      },
      true,
    );
    const result = await runCli(['config', 'check', '--config', file], isolated);
    expect(result.code).toBe(1);
    const errors = lines(result.stderr);
    expect(errors).toContain(
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    );
    expect(errors).toContain('hooks.path: must not be "/"');
    expect(errors.some((l) => l.startsWith('hooks.defaultSessionKey: "x" is outside'))).toBe(true);
    expect(result.stdout).not.toMatch(/\bok\b/);
  });

  it('exits 1 naming the key path of an unknown key and a missing variable', async () => {
    const file = writeConfigIn(dir, { hooks: { tokn: 'x', token: '${AGENTGATE_TEST_UNSET}' } });
    const result = await runCliInProcess(['config', 'check', '--config', file], {
      ...isolated,
      AGENTGATE_TEST_UNSET: undefined,
    });
    expect(result.code).toBe(1);
    const errors = lines(result.stderr);
    expect(errors).toContain('hooks.tokn: unknown key');
    expect(errors).toContain('hooks.token: environment variable AGENTGATE_TEST_UNSET is not set');
  });

  it('substitutes ${ENV} from its environment', async () => {
    const file = writeConfigIn(dir, { hooks: { token: '${AGENTGATE_TEST_HOOK}' } });
    const unset = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(unset.code).toBe(1);
    const set = await runCliInProcess(['config', 'check', '--config', file], {
      ...isolated,
      AGENTGATE_TEST_HOOK: HOOK_TOKEN,
    });
    expect(set.code).toBe(0);
  });

  it('exits 0 with a warning for a hook token under 32 characters', async () => {
    const file = writeConfigIn(dir, { hooks: { token: 'h'.repeat(20) } });
    const result = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^warning: hooks\.token: shorter than 32 characters/m);
  });

  it('exits 1 for a file that does not exist, and does not create it', async () => {
    const file = join(dir, 'missing.json5');
    const result = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(file);
    expect(existsSync(file)).toBe(false);
  });
});

describe('agentgate config check: hook tokens and ${file:}', () => {
  const CI = 'ci-sender-token-0123456789abcdef01234';

  it("accepts senders' tokens without hooks.token, and prints an expired one as a warning", async () => {
    const file = writeConfigIn(dir, {
      hooks: {
        enabled: true,
        token: undefined,
        allowedSources: ['10.0.0.0/8', '2001:db8::/32'],
        tokens: [
          { id: 'ci', token: CI, hooks: ['agent', 'runs'], notAfter: '2999-01-01T00:00:00Z' },
          { id: 'old', token: `${CI}-old`, notAfter: '2020-01-01T00:00:00+02:00', allowedSources: ['::1'] },
        ],
      },
    });
    const result = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`${file}: ok`);
    expect(lines(result.stderr.trim())).toEqual([
      'warning: hooks.tokens[1].notAfter: expired (2020-01-01T00:00:00+02:00); it opens nothing',
    ]);
  });

  it('names every problem of the token list by key path, never a token', async () => {
    const file = writeConfigIn(dir, {
      hooks: {
        allowedSources: [],
        tokens: [
          { id: 'ci', token: CI, hooks: ['nope'] },
          { id: 'ci', token: CI, notAfter: 'next week' },
          { id: 'default', token: HOOK_TOKEN, allowedSources: ['10.0.0.0/33'] },
        ],
      },
    });
    const result = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(result.code).toBe(1);
    expect(lines(result.stderr.trim())).toEqual([
      'hooks.tokens[0].hooks[0]: "nope" is not a hook; the hooks are wake, agent, runs',
      'hooks.tokens[1].id: "ci" is also the id of hooks.tokens[0]; ids must be unique',
      'hooks.tokens[1].token: the same as hooks.tokens[0].token; give each sender its own token',
      'hooks.tokens[1].notAfter: "next week" is not an ISO 8601 date-time with a zone, like "2026-12-31T23:59:59Z" or "2026-12-31T23:59:59+02:00"',
      'hooks.tokens[2].id: "default" is the id of hooks.token; choose another',
      'hooks.tokens[2].token: must differ from hooks.token; give each sender its own token',
      'hooks.tokens[2].allowedSources[0]: "10.0.0.0/33": the prefix length must be a number from 0 to 32 for IPv4',
      'hooks.allowedSources: is empty, which would refuse every address; remove it to allow every address',
      `${file}: 8 problem(s)`,
    ]);
    expect(result.stderr).not.toContain(CI);
    expect(result.stderr).not.toContain(HOOK_TOKEN);
  });

  it('reads ${file:} secrets, and names a missing file by key, path and ENOENT', async () => {
    const secret = join(dir, 'hook-token');
    writeFileSync(secret, `${HOOK_TOKEN}\n`, { mode: 0o600 });
    const file = writeConfigIn(dir, {
      hooks: { token: `\${file:${secret}}`, tokens: [{ id: 'ci', token: '${file:${SECRETS}/ci-token}' }] },
    });
    const missing = await runCliInProcess(['config', 'check', '--config', file], {
      ...isolated,
      SECRETS: dir,
    });
    expect(missing.code).toBe(1);
    expect(lines(missing.stderr.trim())).toEqual([
      `hooks.tokens[0].token: cannot read ${join(dir, 'ci-token')}: ENOENT`,
      `${file}: 1 problem(s)`,
    ]);
    writeFileSync(join(dir, 'ci-token'), `${CI}\r\n`, { mode: 0o600 });
    const found = await runCliInProcess(['config', 'check', '--config', file], { ...isolated, SECRETS: dir });
    expect(found.code).toBe(0);
    expect(found.stderr).toBe('');
    const relative = writeConfigIn(dir, { hooks: { token: '${file:hook-token}' } });
    const refused = await runCliInProcess(['config', 'check', '--config', relative], isolated);
    expect(lines(refused.stderr.trim())[0]).toBe(
      'hooks.token: ${file:hook-token}: the file path must be absolute (it starts with "/")',
    );
  });

  it('fuzz: any token list gives exit 0 or 1, key-path lines only, and never a token', async () => {
    // Every token carries this mark, which nothing else in a config or a path holds.
    const MARK = 'sekret-';
    const free = (text: string) => !text.includes('sekret');
    const token = fc.oneof(
      fc
        .string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 1, maxLength: 40 })
        .map((t) => MARK + t),
      fc.constantFrom(`${MARK}shared-0123456789abcdef0123456789`, `${MARK}x`),
    );
    const id = fc.oneof(
      fc.constantFrom('ci', 'github', 'default', 'a', 'ci', 'Bad Id', '', 'x'.repeat(65), 'ünï'),
      fc.stringMatching(/^[a-z0-9_]{1,20}$/),
    );
    const octet = fc.integer({ min: 0, max: 300 });
    const cidr = fc.oneof(
      fc
        .tuple(octet, octet, octet, octet, fc.integer({ min: 0, max: 40 }))
        .map(([a, b, c, d, n]) => `${a}.${b}.${c}.${d}/${n}`),
      fc.ipV4(),
      fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 140 })).map(([ip, n]) => `${ip}/${n}`),
      fc.ipV6(),
      fc.constantFrom(
        '::ffff:10.0.0.0/104',
        'fe80::1%eth0',
        '10.0.0.0/255.0.0.0',
        '::/0',
        'loopback',
        'localhost',
      ),
      fc.string({ maxLength: 20 }).filter(free),
      fc.constant(42),
    );
    const sources = fc.option(fc.array(cidr, { maxLength: 4 }), { nil: undefined });
    const offset = fc.constantFrom('Z', '+02:00', '-11:30', 'z', '+2', '');
    const notAfter = fc.option(
      fc.oneof(
        fc
          .tuple(
            fc.date({ min: new Date('1990-01-01'), max: new Date('2999-12-31'), noInvalidDate: true }),
            offset,
          )
          .map(([date, zone]) => date.toISOString().replace('Z', zone)),
        fc.constantFrom('2026-02-30T00:00:00Z', '2026-12-31', 'tomorrow', '2026-12-31T24:00:00Z'),
        fc.string({ maxLength: 30 }).filter(free),
      ),
      { nil: undefined },
    );
    const hookName = fc.constantFrom('wake', 'agent', 'runs', 'github', 'mapping-1', 'gmail', 'nope', '');
    const entry = fc.record(
      {
        id,
        token,
        hooks: fc.option(fc.array(hookName, { maxLength: 3 }), { nil: undefined }),
        notAfter,
        allowedSources: sources,
      },
      { requiredKeys: ['id', 'token'] },
    );
    const config = fc.record({
      enabled: fc.boolean(),
      hookToken: fc.option(fc.oneof(token, fc.constant(HOOK_TOKEN), fc.constant(ADMIN_TOKEN)), {
        nil: undefined,
      }),
      tokens: fc.array(
        fc.oneof(
          { weight: 5, arbitrary: entry },
          { weight: 1, arbitrary: entry.map((e) => ({ ...e, token: ADMIN_TOKEN })) },
        ),
        { maxLength: 6 },
      ),
      allowedSources: sources,
      trustedProxies: fc.array(cidr, { maxLength: 3 }),
      presets: fc.constantFrom([], ['gmail']),
    });

    const file = join(dir, 'fuzz.json5');
    const keyPath = /^(hooks|gateway)(\.[A-Za-z]+|\[\d+\])*: /;
    await fc.assert(
      fc.asyncProperty(config, async (c) => {
        const hooks = {
          enabled: c.enabled,
          token: c.hookToken,
          tokens: c.tokens,
          allowedSources: c.allowedSources,
          presets: c.presets,
          mappings: [{ id: 'github', match: { path: 'github' } }, { match: { path: 'other' } }],
        };
        writeFileSync(
          file,
          JSON.stringify({
            gateway: { auth: { token: ADMIN_TOKEN }, trustedProxies: c.trustedProxies },
            hooks,
          }),
        );
        const result = await runCliInProcess(['config', 'check', '--config', file], isolated);
        expect([0, 1]).toContain(result.code);
        const errors = lines(result.stderr).filter((line) => line !== '');
        if (result.code === 0) {
          expect(result.stdout).toBe(`${file}: ok\n`);
          for (const line of errors) expect(line.replace(/^warning: /, '')).toMatch(keyPath);
        } else {
          expect(result.stdout).toBe('');
          expect(errors.at(-1)).toBe(`${file}: ${errors.length - 1} problem(s)`);
          for (const line of errors.slice(0, -1)) expect(line).toMatch(keyPath);
        }
        const output = result.stdout + result.stderr;
        expect(output).not.toContain(MARK);
        expect(output).not.toContain(HOOK_TOKEN);
        expect(output).not.toContain(ADMIN_TOKEN);
      }),
      { numRuns: 200 },
    );
  });
});

// One refusal spawns the bin, for its exit code and output; the others run in process.
describe('agentgate run with an invalid config', () => {
  it('exits non-zero before listening, with the key-path messages', async () => {
    const file = writeConfigIn(dir, { hooks: { enabled: true, token: undefined, path: '/' } });
    const result = await runCli(['run', '--config', file, '--port', '0'], isolated, 15_000);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/listening/);
    const errors = lines(result.stderr);
    expect(errors).toContain(
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    );
    expect(errors).toContain('hooks.path: must not be "/"');
    // Nothing was opened: the store does not exist.
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });

  it('exits 1 before listening when the PostgreSQL store cannot be reached, naming store.url', async () => {
    const file = writeConfigIn(dir, {
      store: { driver: 'postgres', url: 'postgres://agent:secret-pw@127.0.0.1:1/agentgate' },
    });
    const result = await runCliInProcess(['run', '--config', file, '--port', '0'], isolated);
    expect(result.code).toBe(1);
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/listening/);
    expect(result.stderr).toMatch(
      /store\.url: cannot connect to PostgreSQL at postgres:\/\/agent:\*\*\*@127\.0\.0\.1:1/,
    );
    expect(`${result.stdout}${result.stderr}`).not.toContain('secret-pw');
  });

  type Refusal = [string, (folder: string) => Record<string, unknown>, string];
  const refusals: Refusal[] = [
    [
      'hooks.enabled without hooks.token',
      () => ({ hooks: { enabled: true, token: undefined } }),
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    ],
    [
      'a hook token under 16 characters',
      () => ({ hooks: { token: 'short-token' } }),
      'hooks.token: must be at least 16 characters',
    ],
    [
      'hooks.token equal to gateway.auth.token',
      () => ({ hooks: { token: ADMIN_TOKEN } }),
      'hooks.token: must differ from gateway.auth.token',
    ],
    ['hooks.path of /', () => ({ hooks: { path: '/' } }), 'hooks.path: must not be "/"'],
    [
      'a defaultSessionKey outside allowedSessionKeyPrefixes',
      () => ({ hooks: { defaultSessionKey: 'ingress', allowedSessionKeyPrefixes: ['hook:'] } }),
      'hooks.defaultSessionKey: "ingress" is outside hooks.allowedSessionKeyPrefixes',
    ],
    [
      'a transformsDir outside the transforms root',
      (folder) => ({ hooks: { transformsDir: join(folder, 'elsewhere') } }),
      'hooks.transformsDir: must stay inside the transforms root',
    ],
    [
      'a mapping transform with ../',
      () => ({ hooks: { mappings: [{ match: { path: 'x' }, transform: { module: '../x.js' } }] } }),
      'hooks.mappings[0].transform.module: must be a path relative to the transforms directory',
    ],
    [
      'a mapping transform with an absolute path',
      (folder) => ({
        hooks: { mappings: [{ match: { path: 'x' }, transform: { module: join(folder, 'x.mjs') } }] },
      }),
      'hooks.mappings[0].transform.module: must be a path relative to the transforms directory',
    ],
    [
      'a mapping transform that is a symlink out of the transforms root',
      () => ({ hooks: { mappings: [{ match: { path: 'x' }, transform: { module: 'escape.mjs' } }] } }),
      'hooks.mappings[0].transform.module: resolves outside the transforms directory',
    ],
  ];

  it.each(refusals)('refuses %s', async (_label, override, expected) => {
    const folder = join(dir, 'conf');
    const transforms = join(folder, 'hooks', 'transforms');
    mkdirSync(transforms, { recursive: true });
    writeFileSync(join(dir, 'x.mjs'), 'export default () => null;\n');
    symlinkSync(join(dir, 'x.mjs'), join(transforms, 'escape.mjs'));
    const file = writeConfigIn(folder, override(folder));

    const result = await runCliInProcess(['run', '--config', file, '--port', '0'], isolated);
    expect(result.code, result.stdout + result.stderr).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/listening/);
    expect(
      lines(result.stderr).some((l) => l.startsWith(expected)),
      result.stderr,
    ).toBe(true);
    expect(existsSync(join(folder, 'state'))).toBe(false);

    // `config check` reports the same problem.
    const check = await runCliInProcess(['config', 'check', '--config', file], isolated);
    expect(check.code).toBe(1);
    expect(lines(check.stderr).some((l) => l.startsWith(expected))).toBe(true);
  });
});

describe('config file location', () => {
  // Each candidate file gets its own hooks.path, so the answer tells which one is in use.
  function candidate(name: string, folder = join(dir, name)) {
    return writeConfigIn(folder, { hooks: { path: `/${name}` } });
  }
  const broken = (folder: string) => writeConfigIn(folder, { hooks: { bogusKey: true } });

  it('--config wins over $AGENTGATE_CONFIG and $AGENTGATE_HOME', async () => {
    const a = candidate('a');
    const b = broken(join(dir, 'b'));
    broken(join(dir, 'c'));
    const result = await runCliInProcess(['config', 'check', '--config', a], {
      ...isolated,
      AGENTGATE_CONFIG: b,
      AGENTGATE_HOME: join(dir, 'c'),
    });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`${a}: ok`);
  });

  it('$AGENTGATE_CONFIG wins over $AGENTGATE_HOME', async () => {
    const b = candidate('b', join(dir, 'b'));
    broken(join(dir, 'c'));
    const result = await runCliInProcess(['config', 'check'], {
      ...isolated,
      AGENTGATE_CONFIG: b,
      AGENTGATE_HOME: join(dir, 'c'),
    });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`${b}: ok`);
  });

  it('$AGENTGATE_HOME/agentgate.json5 wins over ~/.agentgate', async () => {
    const c = candidate('c');
    broken(join(dir, 'home', '.agentgate'));
    const result = await runCliInProcess(['config', 'check'], {
      ...isolated,
      AGENTGATE_HOME: join(dir, 'c'),
    });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`${c}: ok`);
  });

  it('falls back to ~/.agentgate/agentgate.json5', async () => {
    const d = candidate('d', join(dir, 'home', '.agentgate'));
    const result = await runCliInProcess(['config', 'check'], isolated);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`${d}: ok`);
  });

  it('run uses the same order: --config, else $AGENTGATE_CONFIG, else $AGENTGATE_HOME', async () => {
    const a = candidate('a');
    const b = candidate('b');
    candidate('c');
    const env = { AGENTGATE_CONFIG: b, AGENTGATE_HOME: join(dir, 'c') };
    const expectServing = async (cli: InProcessCli, served: string, notServed: string[]) => {
      expect((await post(cli.url, `/${served}/wake`, HOOK_TOKEN, { text: 'x' })).status).toBe(200);
      for (const other of notServed) {
        expect((await post(cli.url, `/${other}/wake`, HOOK_TOKEN, { text: 'x' })).status).toBe(404);
      }
    };

    const withFlag = await startHere(['--config', a, '--port', '0'], env);
    await expectServing(withFlag, 'a', ['b', 'c']);
    expect(await withFlag.stop()).toBe(0);

    const withEnv = await startHere(['--port', '0'], env);
    await expectServing(withEnv, 'b', ['a', 'c']);
    expect(await withEnv.stop()).toBe(0);

    const withHome = await startHere(['--port', '0'], { AGENTGATE_HOME: join(dir, 'c') });
    await expectServing(withHome, 'c', ['a', 'b']);
    expect(await withHome.stop()).toBe(0);
  });
});

// The first start spawns the bin: the file's mode is the real process's doing, umask and all.
describe('starter config', () => {
  it('is written with mode 0600 and random tokens, and the gateway serves with it', async () => {
    const home = join(dir, 'fresh');
    mkdirSync(home);
    const cli = await start(['--port', '0'], { AGENTGATE_HOME: home });
    const file = join(home, 'agentgate.json5');

    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(cli.output()).toContain(file);
    expect(cli.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const written = JSON5.parse(readFileSync(file, 'utf8'));
    const hookToken: unknown = written.hooks?.token;
    const gatewayToken: unknown = written.gateway?.auth?.token;
    expect(typeof hookToken).toBe('string');
    expect(typeof gatewayToken).toBe('string');
    expect((hookToken as string).length).toBeGreaterThanOrEqual(32);
    expect((gatewayToken as string).length).toBeGreaterThanOrEqual(32);
    expect(hookToken).not.toBe(gatewayToken);
    expect(written.hooks.enabled).toBe(true);
    expect(written.gateway.bind).toBe('127.0.0.1');
    expect(written.store).toMatchObject({ driver: 'sqlite' });

    const accepted = await post(cli.url, '/hooks/wake', hookToken as string, {
      text: 'hello from the starter',
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ ok: true, eventOutcome: 'queued' });
    const agentRun = await post(cli.url, '/hooks/agent', hookToken as string, {
      message: 'hi',
      deliver: false,
    });
    expect(agentRun.status).toBe(202);

    // The gateway token is not a hook token, and the admin API takes the gateway token.
    expect((await post(cli.url, '/hooks/wake', gatewayToken as string, { text: 'x' })).status).toBe(401);
    const events = await fetch(`${cli.url}/api/sessions/agent:main:main/events`, {
      headers: { authorization: `Bearer ${gatewayToken}` },
    }).then(readAnswer);
    expect(events.status).toBe(200);
    expect(events.body.events.map((e: { id: string }) => e.id)).toContain(accepted.body.eventId);

    // The state lives next to the config.
    expect(existsSync(join(home, 'state', 'agentgate.db'))).toBe(true);

    expect(await cli.kill('SIGTERM')).toEqual({ code: 0, signal: null });

    // The written file is itself valid.
    const check = await runCliInProcess(['config', 'check'], { ...isolated, AGENTGATE_HOME: home });
    expect(check.code).toBe(0);
  });

  it('creates a missing config folder, and is not rewritten on the next start', async () => {
    const home = join(dir, 'not', 'there', 'yet');
    const first = await startHere(['--port', '0'], { AGENTGATE_HOME: home });
    const file = join(home, 'agentgate.json5');
    const text = readFileSync(file, 'utf8');
    expect(await first.stop()).toBe(0);

    const second = await startHere(['--port', '0'], { AGENTGATE_HOME: home });
    expect(second.output()).not.toContain('starter');
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(await second.stop()).toBe(0);
  });

  it('two starter configs get different tokens', async () => {
    const tokens = [];
    for (const name of ['one', 'two']) {
      const home = join(dir, name);
      const cli = await startHere(['--port', '0'], { AGENTGATE_HOME: home });
      await cli.stop();
      const written = JSON5.parse(readFileSync(join(home, 'agentgate.json5'), 'utf8'));
      tokens.push(written.hooks.token, written.gateway.auth.token);
    }
    expect(new Set(tokens).size).toBe(4);
  });
});

describe('signals, and the command line of run', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s makes run exit with code 0', async (signal) => {
    const file = writeConfigIn(dir);
    const cli = await start(['--config', file, '--port', '0']);
    expect((await post(cli.url, '/hooks/wake', HOOK_TOKEN, { text: 'before stop' })).status).toBe(200);
    expect(await cli.kill(signal)).toEqual({ code: 0, signal: null });
  });

  it('SIGTERM sent the moment the listening line appears still exits 0', async () => {
    const file = writeConfigIn(dir);
    for (let i = 0; i < 5; i++) {
      const cli = await start(['--config', file, '--port', '0']);
      expect(await cli.kill('SIGTERM')).toEqual({ code: 0, signal: null });
    }
  });

  it('--bind and --port override the config', async () => {
    const file = writeConfigIn(dir, { gateway: { bind: '0.0.0.0', port: 1 } });
    const cli = await startHere(['--config', file, '--port', '0', '--bind', '127.0.0.1']);
    expect(cli.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(cli.url).not.toMatch(/:1$/);
    expect((await fetch(`${cli.url}/healthz`).then(readAnswer)).body).toEqual({ ok: true });
  });
});
