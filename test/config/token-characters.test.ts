// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config files hold literal ${…} references
/**
 * The characters a token may hold (src/config/token-text-rules.ts; docs/configuration.md,
 * "Token characters"): white space or a control character anywhere in a token is a
 * problem naming its key — the hook and admin tokens, each sender's, the Gmail push
 * token, the providers' API keys and the platforms' tokens — and so is a character
 * outside printable ASCII in a token the gateway checks; printable ASCII outside RFC
 * 6750's b64token only warns. A `${file:}` secret's one trailing newline is still
 * removed; a second one is named. No problem holds the token. Then through the real
 * `config check` and `doctor`, and a Bearer request showing why such a token can never
 * authenticate.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LoadResult, loadConfigFile } from '../../src/config/load.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/gateway.js';

const HOOK = 'hook-token-0123456789abcdef0123456789';
const ADMIN = 'admin-token-0123456789abcdef012345678';
const SENDER = 'sender-token-0123456789abcdef0123456';

let dir: string;
beforeEach(() => {
  dir = tempDir('agentgate-token-chars-');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(config: Record<string, unknown>): string {
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, JSON.stringify(config, null, 2), { mode: 0o600 });
  return path;
}

const base = (hooks: Record<string, unknown> = {}, rest: Record<string, unknown> = {}) => ({
  gateway: { auth: { token: ADMIN } },
  ...rest,
  hooks: { enabled: true, token: HOOK, ...hooks },
});

function load(config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): LoadResult {
  return loadConfigFile(write(config), env);
}

/** The problems, checked to hold no token (`secrets`: the bad tokens of the test). */
function problemsOf(result: LoadResult, secrets: string[]): string[] {
  if (result.ok) throw new Error('expected problems, but the config was accepted');
  for (const secret of secrets) expect(result.problems.join('\n')).not.toContain(secret.trim());
  return result.problems;
}

describe('token characters', () => {
  it('refuses white space inside a hook, sender or admin token, naming the key and where', () => {
    const spaced = 'hook-token-0123 456789abcdef0123456789';
    const tabbed = 'sender-token-0123456789\tabcdef0123456';
    const broken = 'admin-token-0123456789\nabcdef012345678';
    const problems = problemsOf(
      load({
        gateway: { auth: { token: broken } },
        hooks: { enabled: true, token: spaced, tokens: [{ id: 'ci', token: tabbed }] },
      }),
      [spaced, tabbed, broken],
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'hooks.token: contains a space at character 16 of 38; a token cannot hold white space (an Authorization: Bearer header cannot carry it)',
        expect.stringMatching(/^hooks\.tokens\[0\]\.token: contains a tab at character 24 of 37; /),
        expect.stringMatching(/^gateway\.auth\.token: contains a newline at character 23 of 38; /),
      ]),
    );
  });

  it('refuses white space at either end, control characters and non-ASCII in the tokens the gateway checks', () => {
    const cases: [string, RegExp][] = [
      [` ${HOOK}`, /^hooks\.token: contains a space at the start; /],
      [`${HOOK} `, /^hooks\.token: contains a space at the end; /],
      [
        `${HOOK.slice(0, 20)}\u0007${HOOK.slice(20)}`,
        /^hooks\.token: contains a control character \(U\+0007\) at character 21 of 38; .*no HTTP header/,
      ],
      [
        `${HOOK.slice(0, 20)}\u00a0${HOOK.slice(20)}`,
        /^hooks\.token: contains white space \(U\+00A0\) at character 21 of 38; /,
      ],
      [
        `${HOOK.slice(0, 20)}é${HOOK.slice(20)}`,
        /^hooks\.token: contains a character outside printable ASCII \(U\+00E9\) at character 21 of 38; /,
      ],
    ];
    for (const [token, expected] of cases) {
      expect(problemsOf(load(base({ token })), [token])).toEqual(
        expect.arrayContaining([expect.stringMatching(expected)]),
      );
    }
  });

  it('a ${file:} secret still loses its one trailing newline; a second one is named, with the reason', () => {
    const one = join(dir, 'one');
    writeFileSync(one, `${HOOK}\n`, { mode: 0o600 });
    const accepted = load(base({ token: `\${file:${one}}` }));
    expect(accepted.ok).toBe(true);
    const two = join(dir, 'two');
    writeFileSync(two, `${HOOK}\r\n\r\n`, { mode: 0o600 });
    expect(problemsOf(load(base({ token: `\${file:${two}}` })), [HOOK])).toContain(
      'hooks.token: contains a carriage return at the end (from a ${file:} secret? only its one trailing newline is removed); a token cannot hold white space (an Authorization: Bearer header cannot carry it)',
    );
  });

  it('refuses white space in the tokens the gateway sends: API keys, platform tokens, the Gmail push token', () => {
    const problems = problemsOf(
      load(
        base(
          { gmail: { account: 'me@example.com', topic: 't', pushToken: 'push token 0123456789abcdef' } },
          {
            models: { providers: { openai: { api: 'openai-chat', apiKey: '${OPENAI_API_KEY}' } } },
            channels: {
              slack: { botToken: 'xoxb-1234 5678' },
              telegram: { botToken: '123456:ABC-DEF\n' },
              mattermost: { baseUrl: 'https://chat.example.com', token: 'mm\ttoken' },
            },
          },
        ),
        // An environment variable set from a file with its newline kept.
        { OPENAI_API_KEY: 'sk-0123456789\n' },
      ),
      ['push token 0123456789abcdef', 'xoxb-1234 5678', '123456:ABC-DEF', 'sk-0123456789'],
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^hooks\.gmail\.pushToken: contains a space at character 5 of 27; /),
        expect.stringMatching(
          /^models\.providers\.openai\.apiKey: contains a newline at the end .*; a token cannot hold white space \(the header or URL it is sent in cannot carry it as it is\)$/,
        ),
        expect.stringMatching(/^channels\.slack\.botToken: contains a space at character 10 of 14; /),
        expect.stringMatching(/^channels\.telegram\.botToken: contains a newline at the end /),
        expect.stringMatching(/^channels\.mattermost\.token: contains a tab at character 3 of 8; /),
      ]),
    );
  });

  it('leaves the platforms’ own characters and passwords alone; warns on a checked token outside b64token', () => {
    const result = load(
      base(
        { tokens: [{ id: 'ci', token: `${SENDER}!#` }] },
        {
          channels: {
            telegram: { botToken: '123456:ABC-DEF_ghi' },
            imessage: { serverUrl: 'http://127.0.0.1:1234', password: 'correct horse battery' },
          },
        },
      ),
    );
    if (!result.ok) throw new Error(result.problems.join('\n'));
    expect(result.warnings).toContain(
      'hooks.tokens[0].token: holds characters a Bearer token may not (RFC 6750: letters, digits, - . _ ~ + /, and = only at the end); the gateway accepts it, a strict client or proxy may not',
    );
    expect(result.warnings.join('\n')).not.toContain(SENDER);
    // base64 with padding, base64url, hex: no warning.
    for (const token of [
      'dGhpcyBpcyBhIHRva2VuIG9mIGJhc2U2NA==',
      'a-b_c.d~e+f/0123456789abcdef0123456789',
      HOOK,
    ]) {
      const clean = load(base({ token }));
      if (!clean.ok) throw new Error(clean.problems.join('\n'));
      expect(clean.warnings.filter((w) => w.startsWith('hooks.token'))).toEqual([]);
    }
  });

  it('`config check` and `doctor` refuse it, naming the key', async () => {
    const spaced = 'hook-token-0123 456789abcdef0123456789';
    const path = write(base({ token: spaced }));
    const isolated = { HOME: join(dir, 'home'), AGENTGATE_CONFIG: '', AGENTGATE_HOME: '' };
    const check = await runCliInProcess(['config', 'check', '--config', path], isolated);
    expect(check.code).not.toBe(0);
    expect(check.stdout + check.stderr).toContain('hooks.token: contains a space at character 16 of 38');
    const doctor = await runCliInProcess(['doctor', '--config', path, '--timeout', '1'], isolated);
    expect(doctor.code).not.toBe(0);
    expect(doctor.stdout + doctor.stderr).toContain('hooks.token: contains a space at character 16 of 38');
    expect(check.stdout + check.stderr + doctor.stdout + doctor.stderr).not.toContain('456789abcdef');
  });
});
