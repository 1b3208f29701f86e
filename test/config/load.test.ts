// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config files hold literal ${ENV} references
/**
 * `loadConfigFile` / `parseConfigText` (docs/configuration.md): `${ENV}`
 * substitution, strictness (unknown keys), type errors by key path, defaults
 * and path resolution.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ConfigFileMissing,
  type LoadResult,
  loadConfigFile,
  parseConfigText,
} from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { tempDir } from '../helpers/gateway.js';

const DAY_MS = 86_400_000;
const HOOK = 'hook-token-0123456789abcdef0123456789';
const ADMIN = 'admin-token-0123456789abcdef012345678';

let dir: string;
beforeEach(() => {
  dir = tempDir('agentgate-config-');
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

function load(config: unknown, env: NodeJS.ProcessEnv = {}): LoadResult {
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, typeof config === 'string' ? config : JSON.stringify(config, null, 2));
  return loadConfigFile(path, env);
}

function okConfig(result: LoadResult): ResolvedConfig {
  if (!result.ok) throw new Error(`expected a valid config, got:\n${result.problems.join('\n')}`);
  return result.config;
}

function problemsOf(result: LoadResult): string[] {
  if (result.ok) throw new Error('expected problems, but the config was accepted');
  return result.problems;
}

describe('${ENV} substitution', () => {
  it('substitutes in nested strings, inside arrays and inside array items that are objects', () => {
    const config = okConfig(
      load(
        {
          gateway: { auth: { token: '${ADMIN_TOKEN}' }, trustedProxies: ['${PROXY}', '10.0.0.0/8'] },
          hooks: {
            enabled: true,
            token: '${HOOK_TOKEN}',
            defaultSessionKey: '${PREFIX}ingress',
            allowedSessionKeyPrefixes: ['${PREFIX}', 'other:'],
            mappings: [
              {
                match: { path: '${HOOK_NAME}' },
                action: 'wake',
                textTemplate: 'from ${HOOK_NAME}: {{payload.title}}',
                verify: { kind: 'github', secret: '${GH_SECRET}' },
              },
            ],
          },
          models: {
            providers: {
              openai: { api: 'openai-chat', baseUrl: 'http://${API_HOST}:${API_PORT}/v1', apiKey: '${KEY}' },
            },
          },
          agents: { defaults: { model: 'openai/gpt-4o-mini' } },
        },
        {
          ADMIN_TOKEN: ADMIN,
          HOOK_TOKEN: HOOK,
          PROXY: '127.0.0.1',
          PREFIX: 'hook:',
          HOOK_NAME: 'github',
          GH_SECRET: 's3cret',
          API_HOST: 'localhost',
          API_PORT: '11434',
          KEY: 'sk-test',
        },
      ),
    );
    expect(config.gateway.auth.token).toBe(ADMIN);
    expect(config.gateway.trustedProxies).toEqual(['127.0.0.1', '10.0.0.0/8']);
    expect(config.hooks.token).toBe(HOOK);
    expect(config.hooks.defaultSessionKey).toBe('hook:ingress');
    expect(config.hooks.allowedSessionKeyPrefixes).toEqual(['hook:', 'other:']);
    const [mapping] = config.hooks.mappings;
    expect(mapping?.match?.path).toBe('github');
    expect(mapping?.textTemplate).toBe('from github: {{payload.title}}');
    expect(mapping?.verify?.secret).toBe('s3cret');
    expect(config.models.providers.openai).toMatchObject({
      baseUrl: 'http://localhost:11434/v1',
      apiKey: 'sk-test',
    });
  });

  it('leaves non-string values alone and does not substitute again inside substituted text', () => {
    const config = okConfig(
      load(
        { gateway: { port: 1234, auth: { token: '${A}' } }, hooks: { enabled: false, maxBodyBytes: 1000 } },
        { A: '${B}-not-expanded-0123456789', B: 'never' },
      ),
    );
    expect(config.gateway.auth.token).toBe('${B}-not-expanded-0123456789');
    expect(config.gateway.port).toBe(1234);
    expect(config.hooks.maxBodyBytes).toBe(1000);
  });

  it('reports a missing variable with the key path and the variable name', () => {
    const problems = problemsOf(load({ hooks: { enabled: true, token: '${AGENTGATE_TEST_MISSING}' } }));
    expect(problems).toContain('hooks.token: environment variable AGENTGATE_TEST_MISSING is not set');
  });

  it('names the path of a missing variable inside arrays and array items', () => {
    const problems = problemsOf(
      load(
        {
          hooks: {
            enabled: true,
            token: HOOK,
            allowedSessionKeyPrefixes: ['hook:', '${MISSING_PREFIX}'],
            mappings: [
              { match: { path: 'a' } },
              { match: { path: 'gh' }, verify: { kind: 'github', secret: '${MISSING_SECRET}' } },
            ],
          },
        },
        {},
      ),
    );
    expect(problems).toContain(
      'hooks.allowedSessionKeyPrefixes[1]: environment variable MISSING_PREFIX is not set',
    );
    expect(problems).toContain(
      'hooks.mappings[1].verify.secret: environment variable MISSING_SECRET is not set',
    );
  });

  it('reports every missing variable, even several in one string', () => {
    const problems = problemsOf(
      load({ gateway: { bind: '${NO_HOST}', auth: { token: '${NO_ONE}-${NO_TWO}' } } }, {}),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'gateway.bind: environment variable NO_HOST is not set',
        'gateway.auth.token: environment variable NO_ONE is not set',
        'gateway.auth.token: environment variable NO_TWO is not set',
      ]),
    );
  });

  it('treats $${X} as the literal text ${X}, whether or not X is set', () => {
    const config = okConfig(
      load(
        {
          hooks: {
            mappings: [
              { match: { path: 'a' }, messageTemplate: 'cost: $${PRICE} and $${UNSET_VAR}, real: ${PRICE}' },
            ],
          },
        },
        { PRICE: '5' },
      ),
    );
    expect(config.hooks.mappings[0]?.messageTemplate).toBe('cost: ${PRICE} and ${UNSET_VAR}, real: 5');
  });

  it('uses process.env when no environment is passed', () => {
    vi.stubEnv('AGENTGATE_TEST_HOOK_TOKEN', HOOK);
    const path = join(dir, 'agentgate.json5');
    writeFileSync(path, '{ hooks: { enabled: true, token: "${AGENTGATE_TEST_HOOK_TOKEN}" } }');
    expect(okConfig(loadConfigFile(path)).hooks.token).toBe(HOOK);
  });
});

describe('unknown keys', () => {
  it.each([
    [{ hooks: { tokn: HOOK } }, 'hooks.tokn: unknown key'],
    [{ gateway: { auth: { tokenn: ADMIN } } }, 'gateway.auth.tokenn: unknown key'],
    [{ gateway: { prot: 1 } }, 'gateway.prot: unknown key'],
    [{ hook: { enabled: true } }, 'hook: unknown key'],
    [
      { hooks: { mappings: [{ match: { path: 'x' }, actoin: 'wake' }] } },
      'hooks.mappings[0].actoin: unknown key',
    ],
    [{ hooks: { mappings: [{ match: { pth: 'x' } }] } }, 'hooks.mappings[0].match.pth: unknown key'],
    [
      { hooks: { mappings: [{ transform: { module: 'x.mjs', exprt: 'default' } }] } },
      'hooks.mappings[0].transform.exprt: unknown key',
    ],
    [{ hooks: { gmail: { serve: { prt: 1 } } } }, 'hooks.gmail.serve.prt: unknown key'],
    [{ store: { driver: 'sqlite', pth: 'x.db' } }, 'store.pth: unknown key'],
    [
      { models: { providers: { e: { api: 'echo', baseUrl: 'x' } } } },
      'models.providers.e.baseUrl: unknown key',
    ],
    [{ agents: { defaults: { timeout: 5 } } }, 'agents.defaults.timeout: unknown key'],
    [{ agents: { list: [{ id: 'main', workspce: 'w' }] } }, 'agents.list[0].workspce: unknown key'],
    [
      { agents: { defaults: { models: [{ id: 'echo/echo', alais: 'e' }] } } },
      'agents.defaults.models[0].alais: unknown key',
    ],
    [{ channels: { telegram: { botToken: 'x', apiBase: 'y' } } }, 'channels.telegram.apiBase: unknown key'],
    [{ channels: { icq: {} } }, 'channels.icq: unknown key'],
  ])('rejects %j with "%s"', (config, expected) => {
    expect(problemsOf(load(config))).toContain(expected);
  });

  it('reports every unknown key at once', () => {
    const problems = problemsOf(
      load({ foo: 1, hooks: { tokn: 'x', pth: '/x' }, gateway: { auth: { t: 1 } } }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'foo: unknown key',
        'hooks.tokn: unknown key',
        'hooks.pth: unknown key',
        'gateway.auth.t: unknown key',
      ]),
    );
  });
});

describe('wrong types and values', () => {
  it.each([
    [{ gateway: { port: '18790' } }, 'gateway.port:'],
    [{ gateway: { port: 70000 } }, 'gateway.port:'],
    [{ gateway: { trustedProxies: '10.0.0.0/8' } }, 'gateway.trustedProxies:'],
    [{ hooks: { enabled: 'yes' } }, 'hooks.enabled:'],
    [{ hooks: { maxBodyBytes: -1 } }, 'hooks.maxBodyBytes:'],
    [{ hooks: { allowedSessionKeyPrefixes: ['hook:', 3] } }, 'hooks.allowedSessionKeyPrefixes[1]:'],
    [{ hooks: { presets: ['hotmail'] } }, 'hooks.presets[0]:'],
    [{ hooks: { mappings: [{ action: 'explode' }] } }, 'hooks.mappings[0].action:'],
    [{ hooks: { mappings: {} } }, 'hooks.mappings:'],
    [{ store: { driver: 'mysql' } }, 'store.driver:'],
    [{ models: { providers: { x: { api: 'carrier-pigeon' } } } }, 'models.providers.x.api:'],
    [{ agents: { defaults: { timeoutSeconds: 'long' } } }, 'agents.defaults.timeoutSeconds:'],
    [{ agents: { defaults: { heartbeat: { every: 'often' } } } }, 'agents.defaults.heartbeat.every:'],
    [{ agents: { list: [{ id: 'has space' }] } }, 'agents.list[0].id:'],
  ])('%j is a problem starting with "%s"', (config, prefix) => {
    const problems = problemsOf(load(config));
    expect(
      problems.some((p) => p.startsWith(prefix)),
      problems.join('\n'),
    ).toBe(true);
  });

  it('names the file for text that is not JSON5, or a top level that is not an object', () => {
    const path = join(dir, 'agentgate.json5');
    expect(problemsOf(parseConfigText('{ hooks: ', path, {}))[0]).toMatch(
      new RegExp(`^${path.replaceAll('.', '\\.')}: not valid JSON5`),
    );
    expect(problemsOf(parseConfigText('[1, 2]', path, {}))).toEqual([
      `${path}: the top level must be an object`,
    ]);
  });

  it('accepts JSON5 syntax: comments, unquoted keys, trailing commas', () => {
    const text = `// comment\n{ hooks: { enabled: true, token: '${HOOK}', /* inline */ }, }\n`;
    expect(okConfig(parseConfigText(text, join(dir, 'agentgate.json5'), {})).hooks.enabled).toBe(true);
  });

  it('throws ConfigFileMissing for a file that does not exist and reports an unreadable one', () => {
    const missing = join(dir, 'nope.json5');
    expect(() => loadConfigFile(missing, {})).toThrow(ConfigFileMissing);
    const asDirectory = join(dir, 'a-directory.json5');
    mkdirSync(asDirectory);
    expect(problemsOf(loadConfigFile(asDirectory, {}))[0]).toMatch(/cannot read/);
  });
});

describe('defaults', () => {
  it('applies the documented defaults to an empty file', () => {
    const config = okConfig(load({}));
    expect(config.configDir).toBe(dir);
    expect(config.configPath).toBe(join(dir, 'agentgate.json5'));
    expect(config.gateway).toMatchObject({ bind: '127.0.0.1', port: 18790, trustedProxies: [] });
    expect(config.store).toEqual({
      driver: 'sqlite',
      path: join(dir, 'state', 'agentgate.db'),
      synchronous: 'full',
      retention: { runsMs: 30 * DAY_MS, eventsMs: 30 * DAY_MS, everyMs: 10 * 60_000 },
    });
    expect(config.hooks).toMatchObject({
      enabled: false,
      path: '/hooks',
      maxBodyBytes: 262144,
      allowRequestSessionKey: false,
      presets: [],
      mappings: [],
      transformsRoot: join(dir, 'hooks', 'transforms'),
      transformsDir: join(dir, 'hooks', 'transforms'),
      streams: { stallSeconds: 30, maxPerToken: 100, max: 1000 },
    });
    expect(config.agents.defaults.timeoutSeconds).toBe(600);
    expect(config.agents.defaults.heartbeat.every).toBe('30m');
    expect(config.agents.defaultAgentId).toBe('main');
    expect(config.agents.list).toEqual([
      expect.objectContaining({
        id: 'main',
        default: true,
        workspace: join(dir, 'workspace'),
        mainSessionKey: 'agent:main:main',
      }),
    ]);
    expect(config.modelPolicy.allowed).toBeUndefined();
  });

  it('fills defaults inside partially written sections', () => {
    const config = okConfig(
      load({
        gateway: { auth: { token: ADMIN } },
        store: { driver: 'sqlite' },
        hooks: { enabled: true, token: HOOK, mappings: [{ match: { path: 'x' } }] },
      }),
    );
    expect(config.gateway.port).toBe(18790);
    expect(config.gateway.bind).toBe('127.0.0.1');
    expect(config.store).toMatchObject({ driver: 'sqlite', path: join(dir, 'state', 'agentgate.db') });
    expect(config.hooks.path).toBe('/hooks');
    expect(config.hooks.maxBodyBytes).toBe(262144);
    expect(config.hooks.streams).toEqual({ stallSeconds: 30, maxPerToken: 100, max: 1000 });
    expect(config.hooks.mappings[0]).toMatchObject({ action: 'agent', allowUnsafeExternalContent: false });
  });

  it('normalises a trailing slash of hooks.path', () => {
    expect(okConfig(load({ hooks: { path: '/in/hooks/' } })).hooks.path).toBe('/in/hooks');
  });

  it('makes the first agent the default when none says default: true', () => {
    const config = okConfig(load({ agents: { list: [{ id: 'ops' }, { id: 'dev' }] } }));
    expect(config.agents.defaultAgentId).toBe('ops');
    expect(config.agents.list.map((a) => [a.id, a.default, a.workspace, a.mainSessionKey])).toEqual([
      ['ops', true, join(dir, 'workspace'), 'agent:ops:main'],
      ['dev', false, join(dir, 'workspace-dev'), 'agent:dev:main'],
    ]);
  });
});

describe('paths', () => {
  it('resolves relative paths against the config file folder, not the working directory', () => {
    const config = okConfig(
      load({
        store: { driver: 'sqlite', path: 'data/gate.db' },
        hooks: { transformsDir: 'hooks/transforms/custom' },
        agents: { list: [{ id: 'main', workspace: 'ws/main' }] },
      }),
    );
    expect(config.store).toMatchObject({ path: join(dir, 'data', 'gate.db') });
    expect(config.hooks.transformsDir).toBe(join(dir, 'hooks', 'transforms', 'custom'));
    expect(config.agents.list[0]?.workspace).toBe(join(dir, 'ws', 'main'));
  });

  it('expands {config_dir}', () => {
    const config = okConfig(
      load({
        store: { driver: 'sqlite', path: '{config_dir}/db/x.db' },
        hooks: { transformsDir: '{config_dir}/hooks/transforms/t' },
        agents: { list: [{ id: 'main', workspace: '{config_dir}/../elsewhere-ws' }] },
      }),
    );
    expect(config.store).toMatchObject({ path: join(dir, 'db', 'x.db') });
    expect(config.hooks.transformsDir).toBe(join(dir, 'hooks', 'transforms', 't'));
    expect(config.agents.list[0]?.workspace).toBe(join(dir, '..', 'elsewhere-ws'));
  });

  it('keeps absolute paths', () => {
    const elsewhere = join(dir, 'abs', 'store.db');
    const config = okConfig(load({ store: { driver: 'sqlite', path: elsewhere } }));
    expect(config.store).toMatchObject({ path: elsewhere });
  });

  it('resolves against the folder of the file, also for a config in a sub-folder', () => {
    const sub = join(dir, 'nested', 'conf');
    mkdirSync(sub, { recursive: true });
    const path = join(sub, 'gate.json5');
    writeFileSync(path, '{ store: { driver: "sqlite", path: "s.db" } }');
    const config = okConfig(loadConfigFile(path, {}));
    expect(config.configDir).toBe(sub);
    expect(config.store).toMatchObject({ path: join(sub, 's.db') });
    expect(config.hooks.transformsRoot).toBe(join(sub, 'hooks', 'transforms'));
  });
});

describe('store.retention', () => {
  const PG_URL = 'postgres://agent@127.0.0.1:5432/agentgate';

  it.each([
    ['sqlite', {}],
    ['postgres', { url: PG_URL }],
  ])('takes the same keys on %s, in milliseconds, "0" and any zero keeping forever', (driver, rest) => {
    const config = okConfig(
      load({ store: { driver, ...rest, retention: { runs: '7d', events: '0', every: '30s' } } }),
    );
    expect(config.store.retention).toEqual({ runsMs: 7 * DAY_MS, eventsMs: 0, everyMs: 30_000 });
    const partial = okConfig(load({ store: { driver, ...rest, retention: { events: '12h' } } }));
    expect(partial.store.retention).toEqual({
      runsMs: 30 * DAY_MS,
      eventsMs: 12 * 3_600_000,
      everyMs: 10 * 60_000,
    });
    expect(
      okConfig(load({ store: { driver, ...rest, retention: { runs: '0d' } } })).store.retention.runsMs,
    ).toBe(0);
  });

  it('defaults on postgres as on sqlite', () => {
    expect(okConfig(load({ store: { driver: 'postgres', url: PG_URL } })).store).toEqual({
      driver: 'postgres',
      url: PG_URL,
      poolMax: 10,
      retention: { runsMs: 30 * DAY_MS, eventsMs: 30 * DAY_MS, everyMs: 10 * 60_000 },
    });
  });

  it.each([
    [{ runs: '30 days' }, 'store.retention.runs:'],
    [{ runs: '1.5d' }, 'store.retention.runs:'],
    [{ events: '500ms' }, 'store.retention.events:'],
    [{ events: 30 }, 'store.retention.events:'],
    [{ every: '-1m' }, 'store.retention.every:'],
    [{ every: '' }, 'store.retention.every:'],
    [{ every: '10M' }, 'store.retention.every:'],
  ])('refuses %j with a problem naming the key', (retention, prefix) => {
    for (const store of [{ driver: 'sqlite' }, { driver: 'postgres', url: PG_URL }]) {
      const problems = problemsOf(load({ store: { ...store, retention } }));
      expect(
        problems.some((p) => p.startsWith(prefix)),
        problems.join('\n'),
      ).toBe(true);
    }
  });

  it('refuses an unknown retention key', () => {
    expect(problemsOf(load({ store: { driver: 'sqlite', retention: { run: '1d' } } }))).toContain(
      'store.retention.run: unknown key',
    );
  });
});
