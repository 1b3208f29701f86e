// biome-ignore-all lint/suspicious/noTemplateCurlyInString: configs hold literal ${file:…} references
/**
 * `agentgate doctor` (docs/operating.md, "`agentgate doctor`"): against a real
 * running gateway and the loopback fakes of every provider and channel, each
 * answering its probe call (getMe, auth.test, /users/@me, …) — all ok; a
 * refused channel token is a `fail` line and exit 1; weak and reused tokens, an
 * open bind, unrestricted request session keys and loose file modes are named;
 * `--json`. No secret ever appears in the output.
 *
 * The gateway (`startCliInProcess`) and doctor (`runCliInProcess`) run in
 * process, but for one test that spawns the bin (`runCli`).
 */
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeDiscord } from '../fakes/discord.js';
import { startFakeBlueBubbles } from '../fakes/imessage.js';
import { startFakeMattermost } from '../fakes/mattermost.js';
import { startFakeMsTeams } from '../fakes/msteams.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { startFakeSignal } from '../fakes/signal.js';
import { startFakeSlack } from '../fakes/slack.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { startFakeWhatsApp } from '../fakes/whatsapp.js';
import { runCli } from '../helpers/cli.js';
import { type InProcessCli, runCliInProcess, startCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, HOOK_TOKEN, merge, tempDir } from '../helpers/gateway.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const SECRETS = {
  openai: 'sk-doctor-openai-key-0001',
  anthropic: 'sk-ant-doctor-key-0002',
  telegram: '123456:doctor-telegram-token',
  slack: 'xoxb-doctor-slack-token',
  discord: 'MTIz.doctor.discord-token',
  mattermost: 'doctor-mattermost-token',
  whatsapp: 'EAAG-doctor-whatsapp-token',
  imessage: 'doctor-bluebubbles-password',
  teams: 'doctor-teams-app-password',
};
const ALL_SECRETS = [...Object.values(SECRETS), HOOK_TOKEN, ADMIN_TOKEN];

type Fakes = {
  openai: Awaited<ReturnType<typeof startFakeOpenAi>>;
  anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
  telegram: Awaited<ReturnType<typeof startFakeTelegram>>;
  slack: Awaited<ReturnType<typeof startFakeSlack>>;
  discord: Awaited<ReturnType<typeof startFakeDiscord>>;
  mattermost: Awaited<ReturnType<typeof startFakeMattermost>>;
  whatsapp: Awaited<ReturnType<typeof startFakeWhatsApp>>;
  signal: Awaited<ReturnType<typeof startFakeSignal>>;
  imessage: Awaited<ReturnType<typeof startFakeBlueBubbles>>;
  teams: Awaited<ReturnType<typeof startFakeMsTeams>>;
};
let fakes: Fakes;

beforeAll(async () => {
  fakes = {
    openai: await startFakeOpenAi({ apiKey: SECRETS.openai }),
    anthropic: await startFakeAnthropic({ apiKey: SECRETS.anthropic }),
    telegram: await startFakeTelegram({ token: SECRETS.telegram }),
    slack: await startFakeSlack({ token: SECRETS.slack }),
    discord: await startFakeDiscord({ token: SECRETS.discord }),
    mattermost: await startFakeMattermost({ token: SECRETS.mattermost }),
    whatsapp: await startFakeWhatsApp({ token: SECRETS.whatsapp, phoneNumberId: '106540352242922' }),
    signal: await startFakeSignal({ account: '+15550000000' }),
    imessage: await startFakeBlueBubbles({ password: SECRETS.imessage }),
    teams: await startFakeMsTeams({ appId: 'doctor-app-id', appPassword: SECRETS.teams }),
  };
});

afterAll(async () => {
  await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()));
});

let dir: string;
let running: InProcessCli[];
let isolated: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = tempDir('agentgate-doctor-');
  running = [];
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
  for (const cli of running) await cli.stop();
  rmSync(dir, { recursive: true, force: true });
});

function fullConfig(port: number): Record<string, unknown> {
  return {
    gateway: { bind: '127.0.0.1', port, auth: { token: ADMIN_TOKEN } },
    hooks: { enabled: true, token: HOOK_TOKEN },
    models: {
      providers: {
        openai: { api: 'openai-chat', baseUrl: fakes.openai.baseUrl, apiKey: SECRETS.openai },
        anthropic: { api: 'anthropic-messages', baseUrl: fakes.anthropic.url, apiKey: SECRETS.anthropic },
        echo: { api: 'echo' },
      },
    },
    agents: {
      defaults: {
        model: 'openai/gpt-4o-mini',
        models: ['openai/gpt-4o-mini', { id: 'anthropic/claude-sonnet-4-5', alias: 'sonnet' }, 'echo/echo'],
      },
    },
    channels: {
      telegram: { botToken: SECRETS.telegram, apiBaseUrl: fakes.telegram.url },
      slack: { botToken: SECRETS.slack, apiBaseUrl: fakes.slack.url },
      discord: { botToken: SECRETS.discord, apiBaseUrl: fakes.discord.url },
      mattermost: { baseUrl: fakes.mattermost.url, token: SECRETS.mattermost },
      whatsapp: {
        phoneNumberId: '106540352242922',
        accessToken: SECRETS.whatsapp,
        apiBaseUrl: fakes.whatsapp.url,
      },
      signal: { rpcUrl: fakes.signal.url, account: '+15550000000' },
      imessage: { serverUrl: fakes.imessage.url, password: SECRETS.imessage },
      msteams: {
        appId: 'doctor-app-id',
        appPassword: SECRETS.teams,
        tokenUrl: fakes.teams.tokenUrl,
        serviceUrl: fakes.teams.serviceUrl,
      },
    },
  };
}

function writeConfigFile(config: Record<string, unknown>, mode = 0o600): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, JSON.stringify(config, null, 2), { mode });
  chmodSync(path, mode);
  return path;
}

/** A port nobody listens on right now (for a gateway started on it, or for "not running"). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `<verdict> <name> <message>` lines of the human output, by check name. */
function verdicts(stdout: string): Map<string, { status: string; line: string }> {
  const out = new Map<string, { status: string; line: string }>();
  for (const line of stdout.split('\n')) {
    const match = /^(ok|warn|fail)\s+(.+?)\s{2,}(.*)$/.exec(line);
    if (match) out.set(match[2] as string, { status: match[1] as string, line });
  }
  return out;
}

function expectNoSecrets(text: string): void {
  for (const secret of ALL_SECRETS) expect(text).not.toContain(secret);
}

const PROBED = [
  'provider openai',
  'provider anthropic',
  'provider echo',
  'channel telegram',
  'channel slack',
  'channel discord',
  'channel mattermost',
  'channel whatsapp',
  'channel signal',
  'channel imessage',
  'channel msteams',
];

describe('agentgate doctor', () => {
  it('all ok against a running gateway: every provider and channel answers its credentials', async () => {
    const port = await freePort();
    const config = writeConfigFile(fullConfig(port));
    const gateway = await startCliInProcess(['--config', config], isolated);
    running.push(gateway);

    const result = await runCliInProcess(['doctor', '--config', config], isolated);
    expect(result.stderr).toBe('');
    const checks = verdicts(result.stdout);
    for (const name of ['config', 'hooks.token', 'gateway.auth.token', 'token reuse', 'gateway.bind']) {
      expect(checks.get(name)?.status, name).toBe('ok');
    }
    for (const name of [
      'session keys',
      'mode config file',
      'mode state dir',
      'gateway',
      'store',
      ...PROBED,
    ]) {
      expect(checks.get(name)?.status, `${name}: ${checks.get(name)?.line}`).toBe('ok');
    }
    expect(checks.get('channel telegram')?.line).toContain('@fake_agentgate_bot');
    expect(checks.get('gateway')?.line).toContain(`http://127.0.0.1:${port}`);
    expect(checks.get('store')?.line).toMatch(/schema version \d+ \(current\)/);
    expect([...checks.values()].every((c) => c.status === 'ok')).toBe(true);
    expect(result.stdout).toMatch(new RegExp(`\\n${checks.size} ok, 0 warn, 0 fail\\n$`));
    expect(result.code).toBe(0);
    expectNoSecrets(result.stdout);

    // Each service saw exactly its probe.
    expect(fakes.telegram.requests.at(-1)?.path).toBe('/bot<token>/getMe');
    expect(fakes.slack.requests.at(-1)?.path).toBe('/api/auth.test');
    expect(fakes.discord.requests.at(-1)?.path).toBe('/api/v10/users/@me');
    expect(fakes.mattermost.requests.at(-1)?.path).toBe('/api/v4/users/me');
    expect(fakes.whatsapp.requests.at(-1)?.path).toBe('/v21.0/106540352242922');
    expect(fakes.imessage.requests.at(-1)?.path).toBe('/api/v1/ping');
    expect(fakes.openai.requests.at(-1)?.path).toBe('/v1/models');
    expect(fakes.anthropic.requests.at(-1)?.path).toBe('/v1/models');
    expect(fakes.telegram.messages).toHaveLength(0);
  });

  it('--json: one object per check, ok true, the summary', async () => {
    const config = writeConfigFile(fullConfig(await freePort()));
    const result = await runCliInProcess(['doctor', '--json', '--config', config], isolated);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ ok: true, config, summary: { fail: 0 } });
    expect(Array.isArray(report.checks)).toBe(true);
    for (const check of report.checks) {
      expect(Object.keys(check).sort()).toEqual(expect.arrayContaining(['message', 'name', 'status']));
      expect(['ok', 'warn', 'fail']).toContain(check.status);
    }
    const names = report.checks.map((c: { name: string }) => c.name);
    expect(names).toEqual(expect.arrayContaining(['config', 'store', ...PROBED]));
    // Not running is a warning only: doctor is also for before the first start.
    expect(report.checks.find((c: { name: string }) => c.name === 'gateway')).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('not running'),
    });
    expect(report.summary.ok + report.summary.warn).toBe(report.checks.length);
    expect(result.code).toBe(0);
    expectNoSecrets(result.stdout);
  });

  it('a refused channel token or API key is a fail line naming the key, and exit 1', async () => {
    const config = fullConfig(await freePort());
    const wrong = {
      channels: {
        telegram: { botToken: '999:wrong-telegram-token', apiBaseUrl: fakes.telegram.url },
        slack: { botToken: 'xoxb-wrong-slack', apiBaseUrl: fakes.slack.url },
      },
      models: {
        providers: {
          openai: { api: 'openai-chat', baseUrl: fakes.openai.baseUrl, apiKey: 'sk-wrong-key-9999' },
        },
      },
    };
    const path = writeConfigFile(merge(config, wrong));
    const result = await runCliInProcess(['doctor', '--config', path], isolated);
    const checks = verdicts(result.stdout);
    expect(checks.get('channel telegram')).toMatchObject({ status: 'fail' });
    expect(checks.get('channel telegram')?.line).toContain('channels.telegram.botToken is refused: HTTP 401');
    expect(checks.get('channel slack')?.line).toContain('channels.slack.botToken is refused: invalid_auth');
    expect(checks.get('provider openai')?.line).toMatch(
      /^fail\s+provider openai\s+the API key is refused: HTTP 401/,
    );
    expect(checks.get('channel discord')?.status).toBe('ok');
    expect(result.stdout).toMatch(/, 3 fail\n$/);
    expect(result.code).toBe(1);
    expectNoSecrets(result.stdout);
    expect(result.stdout).not.toContain('wrong-telegram-token');
    expect(result.stdout).not.toContain('sk-wrong-key-9999');

    const json = JSON.parse((await runCliInProcess(['doctor', '--json', '--config', path], isolated)).stdout);
    expect(json.ok).toBe(false);
    expect(json.summary.fail).toBe(3);
  });

  it('a service that does not answer is a fail within the time limit', async () => {
    const closed = await freePort();
    const path = writeConfigFile(
      merge(fullConfig(await freePort()), {
        channels: { mattermost: { baseUrl: `http://127.0.0.1:${closed}`, token: SECRETS.mattermost } },
      }),
    );
    const result = await runCliInProcess(['doctor', '--config', path, '--timeout', '2'], isolated);
    expect(verdicts(result.stdout).get('channel mattermost')?.line).toMatch(
      /^fail\s+channel mattermost\s+cannot reach 127\.0\.0\.1:\d+: ECONNREFUSED$/,
    );
    expect(result.code).toBe(1);
  });

  it('weak tokens warn; a hook token reused as the admin token fails (run refuses it too)', async () => {
    const weak = writeConfigFile({
      gateway: {
        bind: '127.0.0.1',
        port: await freePort(),
        auth: { token: 'adminadminadminadminadminadmin12' },
      },
      hooks: { enabled: true, token: 'hook-token-short-20' },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const result = await runCliInProcess(['doctor', '--config', weak], isolated);
    const checks = verdicts(result.stdout);
    expect(checks.get('hooks.token')?.line).toMatch(
      /^warn\s+hooks\.token\s+weak: 19 characters \(use at least 32\)/,
    );
    expect(checks.get('gateway.auth.token')?.line).toMatch(
      /^warn\s+gateway\.auth\.token\s+weak: .*bits of entropy/,
    );
    expect(checks.get('token reuse')?.status).toBe('ok');
    expect(checks.get('config')?.status).toBe('ok');
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain('hook-token-short-20');
    expect(result.stdout).not.toContain('adminadminadmin');

    const reused = writeConfigFile({
      gateway: { bind: '127.0.0.1', port: await freePort(), auth: { token: HOOK_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const again = await runCliInProcess(['doctor', '--config', reused], isolated);
    const second = verdicts(again.stdout);
    expect(second.get('token reuse')?.line).toMatch(
      /^fail\s+token reuse\s+hooks\.token equals gateway\.auth\.token/,
    );
    expect(second.get('config')?.status).toBe('fail');
    expect(again.stdout).toContain('- hooks.token: must differ from gateway.auth.token');
    // The other checks still run on an invalid config.
    expect(second.get('provider echo')?.status).toBe('ok');
    expect(again.code).toBe(1);
    expectNoSecrets(again.stdout);
  });

  it('an open bind without trustedProxies and request session keys without prefixes warn', async () => {
    const path = writeConfigFile({
      gateway: { bind: '0.0.0.0', port: await freePort(), auth: { token: ADMIN_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN, allowRequestSessionKey: true },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const result = await runCliInProcess(['doctor', '--config', path], isolated);
    const checks = verdicts(result.stdout);
    expect(checks.get('gateway.bind')?.line).toMatch(
      /^warn\s+gateway\.bind\s+0\.0\.0\.0 is reachable from other hosts and gateway\.trustedProxies is empty/,
    );
    expect(checks.get('session keys')?.line).toMatch(
      /^warn\s+session keys\s+hooks\.allowRequestSessionKey is true without hooks\.allowedSessionKeyPrefixes/,
    );
    expect(result.code).toBe(0);

    const fixed = writeConfigFile({
      gateway: {
        bind: '0.0.0.0',
        port: await freePort(),
        auth: { token: ADMIN_TOKEN },
        trustedProxies: ['127.0.0.1'],
      },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        allowRequestSessionKey: true,
        allowedSessionKeyPrefixes: ['hook:'],
      },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const checks2 = verdicts((await runCliInProcess(['doctor', '--config', fixed], isolated)).stdout);
    expect(checks2.get('gateway.bind')?.status).toBe('ok');
    expect(checks2.get('session keys')?.line).toContain('"hook:"');
  });

  it('file modes: a group-readable config warns, a world-readable one fails, an open state dir warns', async () => {
    const config = {
      gateway: { bind: '127.0.0.1', port: await freePort(), auth: { token: ADMIN_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    };
    const path = writeConfigFile(config, 0o640);
    mkdirSync(join(dir, 'state'), { mode: 0o755 });
    chmodSync(join(dir, 'state'), 0o755);
    const result = await runCliInProcess(['doctor', '--config', path], isolated);
    const checks = verdicts(result.stdout);
    expect(checks.get('mode config file')?.line).toMatch(
      /^warn\s+mode config file\s+.* is 0640: readable by the group; chmod 600 /,
    );
    expect(checks.get('mode state dir')?.line).toMatch(
      /^warn\s+mode state dir\s+.* is 0755: open to other users; chmod 700 /,
    );
    expect(result.code).toBe(0);

    chmodSync(path, 0o644);
    const world = await runCliInProcess(['doctor', '--config', path], isolated);
    expect(verdicts(world.stdout).get('mode config file')?.line).toMatch(
      /^fail\s+mode config file\s+.* is 0644: readable by every local user/,
    );
    expect(world.code).toBe(1);
  });

  it('hook tokens: one line per id with its hooks, expiry and sources; soon and expired warn; never the token', async () => {
    const day = 86_400_000;
    const inTwoDays = new Date(Date.now() + 2 * day + 60_000).toISOString();
    const later = '2999-06-30T12:00:00+02:00';
    const past = '2020-01-01T00:00:00Z';
    const tokens = {
      ci: 'ci-sender-token-0123456789abcdef01234',
      soon: 'soon-sender-token-0123456789abcdef012',
      old: 'old-sender-token-0123456789abcdef0123',
      weak: 'weakweakweakweakweakweakweakweak',
    };
    const path = writeConfigFile({
      gateway: { bind: '127.0.0.1', port: await freePort(), auth: { token: ADMIN_TOKEN } },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        allowedSources: ['10.0.0.0/8', '::1'],
        mappings: [{ id: 'github', match: { path: 'github' } }],
        tokens: [
          {
            id: 'ci',
            token: tokens.ci,
            hooks: ['agent', 'runs'],
            notAfter: later,
            allowedSources: ['10.1.0.0/16'],
          },
          { id: 'soon', token: tokens.soon, hooks: ['github'], notAfter: inTwoDays },
          { id: 'old', token: tokens.old, notAfter: past },
          { id: 'weak', token: tokens.weak },
        ],
      },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const result = await runCliInProcess(['doctor', '--config', path], isolated);
    const checks = verdicts(result.stdout);
    expect(checks.get('hook sources')?.line).toMatch(
      /^ok\s+hook sources\s+every hook request must come from 10\.0\.0\.0\/8, ::1 \(hooks\.allowedSources\)$/,
    );
    expect(checks.get('hook token default')?.line).toMatch(
      /^ok\s+hook token default\s+opens every hook; never expires; from wherever hooks\.allowedSources allows$/,
    );
    expect(checks.get('hook token ci')?.line).toMatch(
      /^ok\s+hook token ci\s+opens agent, runs; expires 2999-06-30T10:00:00\.000Z; from 10\.1\.0\.0\/16$/,
    );
    expect(checks.get('hook token soon')?.line).toMatch(
      /^warn\s+hook token soon\s+opens github; expires \S+Z, in 2 days: give the sender a new token before then; /,
    );
    expect(checks.get('hook token old')?.line).toMatch(
      /^warn\s+hook token old\s+opens every hook; expired 2020-01-01T00:00:00\.000Z: it opens nothing/,
    );
    expect(checks.get('hook token weak')?.line).toMatch(
      /^warn\s+hook token weak\s+.*; weak: one chunk repeated/,
    );
    // The config itself is valid: its expiry and length warnings are the token lines' to tell.
    expect(checks.get('config')?.status).toBe('ok');
    expect(checks.get('token reuse')?.status).toBe('ok');
    expect(result.code).toBe(0);
    expectNoSecrets(result.stdout);
    for (const token of Object.values(tokens)) expect(result.stdout).not.toContain(token);

    // A sender's token reused elsewhere fails the reuse check, as `run` refuses it.
    const reused = writeConfigFile({
      gateway: { bind: '127.0.0.1', port: await freePort(), auth: { token: ADMIN_TOKEN } },
      hooks: { enabled: true, tokens: [{ id: 'ci', token: ADMIN_TOKEN }] },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const again = await runCliInProcess(['doctor', '--config', reused], isolated);
    const second = verdicts(again.stdout);
    expect(second.get('token reuse')?.line).toMatch(
      /^fail\s+token reuse\s+gateway\.auth\.token equals hooks\.tokens\[0\]\.token/,
    );
    // No hooks.token, but a sender's token: hooks may be enabled.
    expect(second.has('hooks.token')).toBe(false);
    expect(again.stdout).toContain('- hooks.tokens[0].token: must differ from gateway.auth.token');
    expect(again.code).toBe(1);
    expectNoSecrets(again.stdout);
  });

  it('secret files: one read through ${file:} and open to others warns, naming the key and the file; 0600 is ok', async () => {
    const secrets = join(dir, 'secrets');
    mkdirSync(secrets, { mode: 0o700 });
    const hookFile = join(secrets, 'hook-token');
    const adminFile = join(secrets, 'admin-token');
    writeFileSync(hookFile, `${HOOK_TOKEN}\n`, { mode: 0o644 });
    chmodSync(hookFile, 0o644);
    writeFileSync(adminFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
    chmodSync(adminFile, 0o600);
    const path = writeConfigFile({
      gateway: { bind: '127.0.0.1', port: await freePort(), auth: { token: `\${file:${adminFile}}` } },
      hooks: { enabled: true, token: `\${file:${hookFile}}` },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
    });
    const result = await runCliInProcess(['doctor', '--config', path], isolated);
    const checks = verdicts(result.stdout);
    const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    expect(checks.get('mode hooks.token')?.line).toMatch(
      new RegExp(
        `^warn\\s+mode hooks\\.token\\s+${escaped(hookFile)}, read for hooks\\.token, is 0644: readable by every local user; chmod 600 ${escaped(hookFile)}$`,
      ),
    );
    expect(checks.get('mode gateway.auth.token')?.line).toMatch(
      new RegExp(`^ok\\s+mode gateway\\.auth\\.token\\s+${escaped(adminFile)} is 0600$`),
    );
    // The values came through: the token checks see the file's content, without its newline.
    expect(checks.get('hooks.token')?.status).toBe('ok');
    expect(checks.get('token reuse')?.status).toBe('ok');
    expect(checks.get('config')?.status).toBe('ok');
    expect(result.code).toBe(0);
    expectNoSecrets(result.stdout);

    chmodSync(hookFile, 0o600);
    const fixed = verdicts((await runCliInProcess(['doctor', '--config', path], isolated)).stdout);
    expect(fixed.get('mode hooks.token')?.status).toBe('ok');
    const modes = [...fixed.entries()].filter(([name]) => name.startsWith('mode '));
    expect(modes.filter(([, check]) => check.status !== 'ok')).toEqual([]);
  });

  it('no config file: a fail line naming where it looked', async () => {
    // Spawned: the bin as a user runs it, `~` from the $HOME of its own process.
    const result = await runCli(['doctor'], isolated);
    expect(result.stdout).toMatch(
      /^fail\s+config\s+no config file at .*home\/\.agentgate\/agentgate\.json5/m,
    );
    expect(result.code).toBe(1);
  });

  describe.skipIf(!PG_ENABLED)('PostgreSQL store', () => {
    it('connects and reads the schema version: none yet warns, current is ok, unreachable fails without the password', async () => {
      const db = await createTestDatabase();
      try {
        const port = await freePort();
        const config = (url: string) =>
          writeConfigFile({
            gateway: { bind: '127.0.0.1', port, auth: { token: ADMIN_TOKEN } },
            hooks: { enabled: true, token: HOOK_TOKEN },
            store: { driver: 'postgres', url },
            models: { providers: { echo: { api: 'echo' } } },
            agents: { defaults: { model: 'echo/echo' } },
          });
        const path = config(db.url);
        const before = verdicts((await runCliInProcess(['doctor', '--config', path], isolated)).stdout);
        expect(before.get('store')?.line).toMatch(/^warn\s+store\s+postgres .*: connected; no schema yet/);

        const gateway = await startCliInProcess(['--config', path], isolated);
        running.push(gateway);
        const after = verdicts((await runCliInProcess(['doctor', '--config', path], isolated)).stdout);
        // The verdict also depends on the server's autovacuum (warned about when off).
        const admin = new pg.Client({ connectionString: db.url });
        await admin.connect();
        const { rows } = await admin.query<{ on: boolean }>(
          "SELECT current_setting('autovacuum') = 'on' AND current_setting('track_counts') = 'on' AS on",
        );
        await admin.end();
        expect(after.get('store')?.line).toMatch(
          rows[0]?.on
            ? /^ok\s+store\s+postgres .*: opens, schema version \d+ \(current\)$/
            : /^warn\s+store\s+postgres .*: opens, schema version \d+ \(current\); the server runs with autovacuum( and track_counts)? off, .*claims slow down over time: turn it on/,
        );
        await gateway.stop();

        const closed = await freePort();
        const unreachable = config(`postgres://postgres:pg-secret-password@127.0.0.1:${closed}/agentgate`);
        const result = await runCliInProcess(['doctor', '--config', unreachable, '--timeout', '2'], isolated);
        expect(verdicts(result.stdout).get('store')?.line).toMatch(
          /^fail\s+store\s+postgres postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/agentgate: cannot connect/,
        );
        expect(result.stdout).not.toContain('pg-secret-password');
        expect(result.code).toBe(1);
      } finally {
        await db.drop();
      }
    });
  });
});
