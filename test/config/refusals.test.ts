// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config files hold literal ${ENV} references
/**
 * Every startup refusal docs/configuration.md lists, and the extra
 * cross-field checks of src/config/semantics.ts, each reported by key path;
 * several at once are all reported.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LoadResult, loadConfigFile } from '../../src/config/load.js';
import { tempDir } from '../helpers/gateway.js';

const HOOK = 'hook-token-0123456789abcdef0123456789';
const ADMIN = 'admin-token-0123456789abcdef012345678';

let root: string;
/** The config folder; `outside` is a sibling folder beyond the transforms root. */
let dir: string;
let outside: string;
let transforms: string;

beforeEach(() => {
  root = tempDir('agentgate-refusals-');
  dir = join(root, 'conf');
  outside = join(root, 'outside');
  transforms = join(dir, 'hooks', 'transforms');
  mkdirSync(transforms, { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(transforms, 'ok.mjs'), 'export default () => null;\n');
  writeFileSync(join(outside, 'evil.mjs'), 'export default () => null;\n');
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function load(hooks: Record<string, unknown>, rest: Record<string, unknown> = {}): LoadResult {
  const path = join(dir, 'agentgate.json5');
  const config = { gateway: { auth: { token: ADMIN } }, ...rest, hooks };
  writeFileSync(path, JSON.stringify(config, null, 2));
  return loadConfigFile(path, {});
}

function problemsOf(result: LoadResult): string[] {
  if (result.ok) throw new Error('expected problems, but the config was accepted');
  return result.problems;
}

function accepted(result: LoadResult): string[] {
  if (!result.ok) throw new Error(`expected a valid config, got:\n${result.problems.join('\n')}`);
  return result.warnings;
}

const withTransform = (module: string, extra: Record<string, unknown> = {}) => ({
  enabled: true,
  token: HOOK,
  ...extra,
  mappings: [{ match: { path: 'x' }, transform: { module } }],
});

describe('startup refusals', () => {
  it('hooks.enabled without hooks.token', () => {
    expect(problemsOf(load({ enabled: true }))).toEqual([
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    ]);
  });

  it('a mapping id taken twice, or the name of a built-in hook or preset', () => {
    const mapping = (id: string, path: string) => ({ id, match: { path }, messageTemplate: 'x' });
    expect(
      problemsOf(
        load({
          enabled: true,
          token: HOOK,
          presets: ['gmail'],
          mappings: [mapping('ci', 'a'), mapping('ci', 'b'), mapping('agent', 'c'), mapping('gmail', 'd')],
        }),
      ),
    ).toEqual([
      'hooks.mappings[1].id: "ci" is already the id of hooks.mappings[0]',
      'hooks.mappings[2].id: "agent" is the name of a built-in hook or preset; choose another id',
      'hooks.mappings[3].id: "gmail" is the name of a built-in hook or preset; choose another id',
    ]);
  });

  it('a token is not required while hooks are disabled', () => {
    expect(accepted(load({ enabled: false }))).toEqual([]);
  });

  it('a hook token under 16 characters', () => {
    const problems = problemsOf(load({ enabled: true, token: 'x'.repeat(15) }));
    expect(problems).toEqual(['hooks.token: must be at least 16 characters']);
  });

  it('hooks.streams: a stall time, caps that are not whole numbers from 1, an unknown key', () => {
    const problems = problemsOf(
      load({
        enabled: true,
        token: HOOK,
        streams: { stallSeconds: 0, maxPerToken: 1.5, max: 0, maxPerHook: 3 },
      }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'hooks.streams.stallSeconds: must be at least 0.1',
        'hooks.streams.maxPerToken: must be a whole number of streams',
        'hooks.streams.max: must be at least 1',
      ]),
    );
    expect(problems.some((p) => p.includes('maxPerHook'))).toBe(true);
    expect(problemsOf(load({ enabled: true, token: HOOK, streams: { stallSeconds: 601 } }))).toEqual([
      'hooks.streams.stallSeconds: must be at most 600',
    ]);
    // Partly written: the rest keeps its defaults.
    expect(accepted(load({ enabled: true, token: HOOK, streams: { stallSeconds: 0.5 } }))).toEqual([]);
  });

  it('a hook token of 16 to 31 characters is a warning, not an error', () => {
    for (const length of [16, 31]) {
      const warnings = accepted(load({ enabled: true, token: 'y'.repeat(length) }));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^hooks\.token: shorter than 32 characters/);
    }
    expect(accepted(load({ enabled: true, token: 'z'.repeat(32) }))).toEqual([]);
  });

  it('hooks.token equal to gateway.auth.token', () => {
    const problems = problemsOf(load({ enabled: true, token: ADMIN }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^hooks\.token: must differ from gateway\.auth\.token/);
  });

  it('hooks.token equal to gateway.auth.token after ${ENV} substitution', () => {
    const path = join(dir, 'agentgate.json5');
    writeFileSync(
      path,
      '{ gateway: { auth: { token: "${SHARED}" } }, hooks: { enabled: true, token: "${SHARED}" } }',
    );
    const problems = problemsOf(loadConfigFile(path, { SHARED: ADMIN }));
    expect(problems.some((p) => p.startsWith('hooks.token: must differ'))).toBe(true);
  });

  it.each(['/', '//'])('hooks.path of %j', (path) => {
    expect(problemsOf(load({ enabled: true, token: HOOK, path }))).toEqual(['hooks.path: must not be "/"']);
  });

  it.each([
    ['hooks', 'must start with "/"'],
    ['/api', 'must not be under /api'],
    ['/healthz/x', 'must not be under /api'],
  ])('hooks.path of %j is refused too', (path, message) => {
    const problems = problemsOf(load({ enabled: true, token: HOOK, path }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(`hooks.path: ${message}`);
  });

  it('a defaultSessionKey outside allowedSessionKeyPrefixes', () => {
    const problems = problemsOf(
      load({
        enabled: true,
        token: HOOK,
        defaultSessionKey: 'ingress',
        allowedSessionKeyPrefixes: ['hook:'],
      }),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^hooks\.defaultSessionKey: "ingress" is outside hooks\.allowedSessionKeyPrefixes/,
    );
  });

  it('a defaultSessionKey inside allowedSessionKeyPrefixes is fine', () => {
    const hooks = {
      enabled: true,
      token: HOOK,
      defaultSessionKey: 'hook:ingress',
      allowedSessionKeyPrefixes: ['x:', 'hook:'],
    };
    expect(accepted(load(hooks))).toEqual([]);
  });

  it('a defaultSessionKey with an empty prefix list is refused', () => {
    const problems = problemsOf(
      load({ enabled: true, token: HOOK, defaultSessionKey: 'hook:a', allowedSessionKeyPrefixes: [] }),
    );
    expect(problems[0]).toMatch(/^hooks\.defaultSessionKey:/);
  });

  it('a defaultSessionKey naming a main session ("agent:…") is refused even without prefixes', () => {
    const problems = problemsOf(load({ enabled: true, token: HOOK, defaultSessionKey: 'agent:main:main' }));
    expect(problems).toEqual([
      'hooks.defaultSessionKey: keys starting with "agent:" are reserved for agents\' main sessions',
    ]);
  });

  describe('transformsDir', () => {
    it.each([
      ['an absolute path elsewhere', () => outside],
      ['a relative path that climbs out', () => 'hooks/transforms/../../x'],
      ['{config_dir}/hooks (the parent of the root)', () => '{config_dir}/hooks'],
      ['a sibling with the root as name prefix', () => '{config_dir}/hooks/transforms-2'],
    ])('outside the transforms root: %s', (_label, value) => {
      const problems = problemsOf(load({ enabled: true, token: HOOK, transformsDir: value() }));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^hooks\.transformsDir: must stay inside the transforms root/);
    });

    it('a symlink inside the root that points outside it', () => {
      symlinkSync(outside, join(transforms, 'escape'));
      const problems = problemsOf(
        load({ enabled: true, token: HOOK, transformsDir: 'hooks/transforms/escape' }),
      );
      expect(problems[0]).toMatch(/^hooks\.transformsDir:/);
    });

    it.each(['hooks/transforms', '{config_dir}/hooks/transforms/sub', 'hooks/transforms/not-yet-created'])(
      '%j is inside',
      (value) => {
        mkdirSync(join(transforms, 'sub'), { recursive: true });
        expect(accepted(load({ enabled: true, token: HOOK, transformsDir: value }))).toEqual([]);
      },
    );
  });

  describe('mapping transform.module', () => {
    const at = 'hooks.mappings[0].transform.module: ';

    it('an absolute path is refused, even one inside the transforms dir', () => {
      for (const module of [join(outside, 'evil.mjs'), join(transforms, 'ok.mjs')]) {
        const problems = problemsOf(load(withTransform(module)));
        expect(problems).toHaveLength(1);
        expect(problems[0]?.startsWith(at)).toBe(true);
      }
    });

    it.each(['../x.js', '../../outside/evil.mjs', 'sub/../../x.js', '..\\x.js'])(
      '%j is refused',
      (module) => {
        const problems = problemsOf(load(withTransform(module)));
        expect(problems).toHaveLength(1);
        expect(problems[0]?.startsWith(at)).toBe(true);
      },
    );

    it('a symlinked file inside the transforms dir that points outside it', () => {
      symlinkSync(join(outside, 'evil.mjs'), join(transforms, 'evil.mjs'));
      const problems = problemsOf(load(withTransform('evil.mjs')));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^hooks\.mappings\[0\]\.transform\.module: resolves outside/);
    });

    it('a file under a symlinked folder that points outside it', () => {
      symlinkSync(outside, join(transforms, 'linked'));
      const problems = problemsOf(load(withTransform('linked/evil.mjs')));
      expect(problems[0]).toMatch(/^hooks\.mappings\[0\]\.transform\.module: resolves outside/);
    });

    it('a symlink that stays inside the transforms dir is fine', () => {
      symlinkSync(join(transforms, 'ok.mjs'), join(transforms, 'alias.mjs'));
      expect(accepted(load(withTransform('alias.mjs')))).toEqual([]);
    });

    it('a plain module inside the transforms dir (and inside a custom transformsDir) is fine', () => {
      expect(accepted(load(withTransform('ok.mjs')))).toEqual([]);
      mkdirSync(join(transforms, 'custom'));
      writeFileSync(join(transforms, 'custom', 'c.mjs'), 'export default () => null;\n');
      expect(
        accepted(load(withTransform('c.mjs', { transformsDir: '{config_dir}/hooks/transforms/custom' }))),
      ).toEqual([]);
    });

    it('a module that does not exist is reported', () => {
      const problems = problemsOf(load(withTransform('missing.mjs')));
      expect(problems[0]).toMatch(/^hooks\.mappings\[0\]\.transform\.module: file not found/);
    });

    it('names the index of the offending mapping', () => {
      const problems = problemsOf(
        load({
          enabled: true,
          token: HOOK,
          mappings: [
            { match: { path: 'a' }, transform: { module: 'ok.mjs' } },
            { match: { path: 'b' } },
            { match: { path: 'c' }, transform: { module: '../c.js' } },
          ],
        }),
      );
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^hooks\.mappings\[2\]\.transform\.module:/);
    });
  });
});

describe('cross-field checks of models and agents', () => {
  const hooks = { enabled: true, token: HOOK };
  const echo = { providers: { echo: { api: 'echo' } } };

  it('a model reference with an unconfigured provider', () => {
    const problems = problemsOf(
      load(hooks, {
        models: echo,
        agents: {
          defaults: { model: 'openai/gpt-4o-mini', models: ['echo/echo', 'anthropic/claude'] },
          list: [{ id: 'main', model: 'ollama/llama3' }],
        },
      }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'agents.defaults.model: provider "openai" is not configured in models.providers',
        'agents.defaults.models[1]: provider "anthropic" is not configured in models.providers',
        'agents.list[0].model: provider "ollama" is not configured in models.providers',
      ]),
    );
    expect(problems).toHaveLength(3);
  });

  it('each reference of a model chain, by its key path, aliases resolved (docs/configuration.md, Models)', () => {
    const problems = problemsOf(
      load(hooks, {
        models: echo,
        agents: {
          defaults: {
            model: { primary: 'e', fallbacks: ['echo/echo', 'openai/gpt-5-mini'] },
            models: [{ id: 'echo/echo', alias: 'e' }],
          },
          list: [{ id: 'main', model: { primary: 'anthropic/claude', fallbacks: ['e', 'bare'] } }],
        },
      }),
    );
    expect(problems).toEqual([
      'agents.defaults.model.fallbacks[1]: provider "openai" is not configured in models.providers',
      'agents.list[0].model.primary: provider "anthropic" is not configured in models.providers',
      'agents.list[0].model.fallbacks[1]: "bare" must be "<provider>/<model>"',
    ]);
  });

  it('an agent with tools whose fallback takes none is a warning', () => {
    const warnings = accepted(
      load(hooks, {
        models: { providers: { echo: { api: 'echo' }, oai: { api: 'openai-chat' } } },
        tools: { servers: { repo: { transport: 'stdio', command: ['node', 'repo.js'] } } },
        agents: {
          defaults: { model: { primary: 'oai/gpt-5-mini', fallbacks: ['echo/echo'] } },
          list: [{ id: 'main', tools: { allow: ['repo.*'] } }],
        },
      }),
    );
    expect(warnings).toContain(
      'agents.list[0].tools: its model "echo/echo" is of a provider with api "echo", which takes no tools',
    );
  });

  it('a chain without fallbacks is accepted; one without its primary is refused', () => {
    expect(
      accepted(load(hooks, { models: echo, agents: { defaults: { model: { primary: 'echo/echo' } } } })),
    ).toEqual([]);
    expect(
      problemsOf(
        load(hooks, { models: echo, agents: { defaults: { model: { fallbacks: ['echo/echo'] } } } }),
      ).join('\n'),
    ).toContain('agents.defaults.model');
  });

  it('a model reference that is not <provider>/<model>', () => {
    const problems = problemsOf(load(hooks, { models: echo, agents: { defaults: { model: 'gpt-4o' } } }));
    expect(problems).toEqual(['agents.defaults.model: "gpt-4o" must be "<provider>/<model>"']);
  });

  it('resolves aliases before checking, and refuses an alias used twice', () => {
    expect(
      accepted(
        load(hooks, {
          models: echo,
          agents: { defaults: { model: 'e', models: [{ id: 'echo/echo', alias: 'e' }] } },
        }),
      ),
    ).toEqual([]);
    const problems = problemsOf(
      load(hooks, {
        models: echo,
        agents: {
          defaults: {
            models: [
              { id: 'echo/a', alias: 'x' },
              { id: 'echo/b', alias: 'x' },
            ],
          },
        },
      }),
    );
    expect(problems).toEqual(['agents.defaults.models[1].alias: "x" is used twice']);
  });

  it('duplicate agent ids', () => {
    const problems = problemsOf(load(hooks, { agents: { list: [{ id: 'a' }, { id: 'b' }, { id: 'a' }] } }));
    expect(problems).toEqual(['agents.list[2].id: "a" is used twice']);
  });

  it('two default agents', () => {
    const problems = problemsOf(
      load(hooks, {
        agents: {
          list: [
            { id: 'a', default: true },
            { id: 'b', default: true },
          ],
        },
      }),
    );
    expect(problems).toEqual(['agents.list: only one agent may have default: true']);
  });
});

describe('several problems at once', () => {
  it('reports every refusal in one go, each by key path', () => {
    const problems = problemsOf(
      load(
        {
          enabled: true,
          path: '/',
          defaultSessionKey: 'main',
          allowedSessionKeyPrefixes: ['hook:'],
          transformsDir: outside,
          mappings: [{ match: { path: 'x' }, transform: { module: '/etc/passwd' } }],
        },
        {
          agents: {
            defaults: { model: 'nope/model' },
            list: [
              { id: 'a', default: true },
              { id: 'a', default: true },
            ],
          },
        },
      ),
    );
    const paths = problems.map((p) => p.split(': ')[0]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'hooks.token',
        'hooks.path',
        'hooks.defaultSessionKey',
        'hooks.transformsDir',
        'hooks.mappings[0].transform.module',
        'agents.list',
        'agents.list[1].id',
        'agents.defaults.model',
      ]),
    );
    expect(problems).toContain(
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    );
  });

  it('reports short-token and same-token problems together', () => {
    const path = join(dir, 'agentgate.json5');
    writeFileSync(
      path,
      JSON.stringify({ gateway: { auth: { token: 'short' } }, hooks: { enabled: true, token: 'short' } }),
    );
    const problems = problemsOf(loadConfigFile(path, {}));
    expect(problems).toEqual([
      'hooks.token: must be at least 16 characters',
      'hooks.token: must differ from gateway.auth.token (the hook token must be dedicated)',
    ]);
  });

  it('reports substitution and schema problems together', () => {
    const problems = problemsOf(load({ enabled: true, token: '${NOT_THERE}', tokn: 'x' }));
    expect(problems).toEqual(
      expect.arrayContaining([
        'hooks.token: environment variable NOT_THERE is not set',
        'hooks.tokn: unknown key',
      ]),
    );
  });
});
