/**
 * The rules of `hooks.tokens`, `hooks.allowedSources` and `gateway.trustedProxies`
 * (src/config/hook-token-rules.ts; docs/configuration.md, "Hook tokens"): ids unique and
 * never `default`; tokens long enough and unshared; scopes naming hooks that exist;
 * readable expiries (a past one only warns); address lists of addresses and CIDRs, never
 * empty; `hooks.enabled` with only `hooks.tokens`. Every problem names its key path and
 * no problem or warning holds a token.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hookNames, parseInstant } from '../../src/config/hook-token-rules.js';
import { type LoadResult, loadConfigFile } from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { configSchema } from '../../src/config/schema.js';
import { tempDir } from '../helpers/gateway.js';

const HOOK = 'hook-token-0123456789abcdef0123456789';
const ADMIN = 'admin-token-0123456789abcdef012345678';
const CI = 'ci-sender-token-0123456789abcdef01234';
const GH = 'github-sender-token-0123456789abcdef0';

let dir: string;
beforeEach(() => {
  dir = tempDir('agentgate-hook-tokens-');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function load(hooks: Record<string, unknown>, rest: Record<string, unknown> = {}): LoadResult {
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, JSON.stringify({ gateway: { auth: { token: ADMIN } }, ...rest, hooks }, null, 2));
  return loadConfigFile(path, {});
}

function problemsOf(result: LoadResult): string[] {
  if (result.ok) throw new Error('expected problems, but the config was accepted');
  expectNoToken(result.problems);
  return result.problems;
}

function accepted(result: LoadResult): { config: ResolvedConfig; warnings: string[] } {
  if (!result.ok) throw new Error(`expected a valid config, got:\n${result.problems.join('\n')}`);
  expectNoToken(result.warnings);
  return result;
}

function expectNoToken(lines: string[]): void {
  for (const token of [HOOK, ADMIN, CI, GH]) expect(lines.join('\n')).not.toContain(token);
}

const FUTURE = '2999-01-01T00:00:00Z';
const PAST = '2001-01-01T00:00:00Z';

describe('hooks.tokens', () => {
  it('resolves after hooks.token (id default), with scope, expiry in epoch ms and sources', () => {
    const { config, warnings } = accepted(
      load({
        enabled: true,
        token: HOOK,
        mappings: [{ id: 'github', match: { path: 'github' } }],
        tokens: [
          { id: 'ci', token: CI, hooks: ['agent', 'runs'], notAfter: '2999-01-01T01:00:00+01:00' },
          { id: 'github', token: GH, hooks: ['github'], allowedSources: ['192.0.2.0/24', '2001:db8::/32'] },
        ],
        allowedSources: ['0.0.0.0/0', '::/0'],
      }),
    );
    expect(warnings).toEqual([]);
    expect(config.hooks.tokens).toEqual([
      { id: 'default', token: HOOK },
      {
        id: 'ci',
        token: CI,
        hooks: ['agent', 'runs'],
        notAfter: Date.UTC(2999, 0, 1),
        allowedSources: undefined,
      },
      {
        id: 'github',
        token: GH,
        hooks: ['github'],
        notAfter: undefined,
        allowedSources: ['192.0.2.0/24', '2001:db8::/32'],
      },
    ]);
    expect(config.hooks.allowedSources).toEqual(['0.0.0.0/0', '::/0']);
  });

  it('hooks.enabled needs hooks.token or an entry of hooks.tokens', () => {
    expect(problemsOf(load({ enabled: true }))).toEqual([
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    ]);
    const { config } = accepted(load({ enabled: true, tokens: [{ id: 'ci', token: CI }] }));
    expect(config.hooks.tokens.map((t) => t.id)).toEqual(['ci']);
  });

  it('ids: unique, and never "default"', () => {
    const problems = problemsOf(
      load({
        enabled: true,
        tokens: [
          { id: 'ci', token: CI },
          { id: 'ci', token: GH },
          { id: 'default', token: `${CI}-2` },
        ],
      }),
    );
    expect(problems).toEqual([
      'hooks.tokens[1].id: "ci" is also the id of hooks.tokens[0]; ids must be unique',
      'hooks.tokens[2].id: "default" is the id of hooks.token; choose another',
    ]);
  });

  it('ids: 1-64 lowercase letters, digits, "-" or "_" (the schema, before the other rules)', () => {
    const problems = problemsOf(
      load({
        tokens: [
          { id: 'Not Valid', token: CI },
          { id: 'x'.repeat(65), token: GH },
          { id: '', token: `${CI}-2` },
          { id: 'ok_id-1', token: `${CI}-3` },
        ],
      }),
    );
    expect(problems).toEqual(
      [0, 1, 2].map((i) => `hooks.tokens[${i}].id: must be 1-64 lowercase letters, digits, "-" or "_"`),
    );
  });

  it('tokens: at least 16 characters, a warning under 32', () => {
    expect(problemsOf(load({ tokens: [{ id: 'a', token: 'x'.repeat(15) }] }))).toEqual([
      'hooks.tokens[0].token: must be at least 16 characters',
    ]);
    const { warnings } = accepted(
      load({
        tokens: [
          { id: 'a', token: 'a'.repeat(16) },
          { id: 'b', token: 'b'.repeat(31) },
          { id: 'c', token: 'c'.repeat(32) },
        ],
      }),
    );
    expect(warnings).toEqual([
      'hooks.tokens[0].token: shorter than 32 characters; use a longer random token',
      'hooks.tokens[1].token: shorter than 32 characters; use a longer random token',
    ]);
  });

  it('tokens: each different from the others, from hooks.token and from gateway.auth.token', () => {
    const problems = problemsOf(
      load({
        token: HOOK,
        tokens: [
          { id: 'a', token: CI },
          { id: 'b', token: CI },
          { id: 'c', token: HOOK },
          { id: 'd', token: ADMIN },
          { id: 'e', token: CI },
        ],
      }),
    );
    expect(problems).toEqual([
      'hooks.tokens[1].token: the same as hooks.tokens[0].token; give each sender its own token',
      'hooks.tokens[2].token: must differ from hooks.token; give each sender its own token',
      'hooks.tokens[3].token: must differ from gateway.auth.token (a hook token must be dedicated)',
      'hooks.tokens[4].token: the same as hooks.tokens[0].token; give each sender its own token',
    ]);
  });

  it('hooks: wake, agent, runs, mapping ids (mapping-<index> without one) and enabled presets', () => {
    const hooks = {
      presets: ['gmail'],
      mappings: [{ id: 'github', match: { path: 'github' } }, { match: { path: 'stripe' } }],
      tokens: [{ id: 'a', token: CI, hooks: ['wake', 'agent', 'runs', 'github', 'mapping-1', 'gmail'] }],
    };
    accepted(load(hooks));
    const raw = configSchema.parse({ hooks });
    expect(hookNames(raw.hooks)).toEqual(['wake', 'agent', 'runs', 'github', 'mapping-1', 'gmail']);

    const problems = problemsOf(
      load({
        mappings: [{ match: { path: 'stripe' } }],
        tokens: [{ id: 'a', token: CI, hooks: ['agent', 'stripe', 'gmail', 'mapping-1'] }],
      }),
    );
    expect(problems).toEqual([
      'hooks.tokens[0].hooks[1]: "stripe" is not a hook; the hooks are wake, agent, runs, mapping-0',
      'hooks.tokens[0].hooks[2]: "gmail" is not a hook; the hooks are wake, agent, runs, mapping-0',
      'hooks.tokens[0].hooks[3]: "mapping-1" is not a hook; the hooks are wake, agent, runs, mapping-0',
    ]);
    expect(problemsOf(load({ tokens: [{ id: 'a', token: CI, hooks: [] }] }))).toEqual([
      'hooks.tokens[0].hooks: must name at least one hook (remove it to open every hook)',
    ]);
  });

  it('notAfter: an ISO 8601 date-time with a zone; in the past only a warning', () => {
    const { warnings, config } = accepted(
      load({
        tokens: [
          { id: 'old', token: CI, notAfter: PAST },
          { id: 'new', token: GH, notAfter: FUTURE },
        ],
      }),
    );
    expect(warnings).toEqual([`hooks.tokens[0].notAfter: expired (${PAST}); it opens nothing`]);
    expect(config.hooks.tokens.map((t) => t.notAfter)).toEqual([Date.parse(PAST), Date.parse(FUTURE)]);

    const bad = [
      'tomorrow',
      '2026-12-31',
      '2026-12-31T23:59:59',
      '2026-02-30T00:00:00Z',
      '2026-12-31 23:59:59Z',
    ];
    const problems = problemsOf(
      load({
        tokens: bad.map((notAfter, index) => ({ id: `t${index}`, token: `${CI}-${index}`, notAfter })),
      }),
    );
    expect(problems).toEqual(
      bad.map(
        (notAfter, index) =>
          `hooks.tokens[${index}].notAfter: ${JSON.stringify(notAfter)} is not an ISO 8601 date-time with a zone, like "2026-12-31T23:59:59Z" or "2026-12-31T23:59:59+02:00"`,
      ),
    );
  });

  it('every token expired and no hooks.token: a warning that every hook refuses', () => {
    const { warnings } = accepted(
      load({ enabled: true, tokens: [{ id: 'old', token: CI, notAfter: PAST }] }),
    );
    expect(warnings).toContain(
      'hooks.tokens: every token has expired and there is no hooks.token; every hook refuses',
    );
  });

  it('allowedSources: addresses and CIDRs, each bad entry by index; an empty list is refused', () => {
    const problems = problemsOf(
      load({
        tokens: [
          {
            id: 'a',
            token: CI,
            allowedSources: ['10.0.0.0/8', 'ten.0.0.0/8', '10.0.0.0/40', '2001:db8::/200'],
          },
          { id: 'b', token: GH, allowedSources: [] },
        ],
        allowedSources: ['::1', 'fe80::1%eth0'],
      }),
    );
    expect(problems).toEqual([
      'hooks.tokens[0].allowedSources[1]: "ten.0.0.0/8" is not an IP address or CIDR (like 203.0.113.7, 10.0.0.0/8 or 2001:db8::/32)',
      'hooks.tokens[0].allowedSources[2]: "10.0.0.0/40": the prefix length must be a number from 0 to 32 for IPv4',
      'hooks.tokens[0].allowedSources[3]: "2001:db8::/200": the prefix length must be a number from 0 to 128 for IPv6',
      'hooks.tokens[1].allowedSources: is empty, which would refuse every address; remove it to allow every address',
      'hooks.allowedSources[1]: "fe80::1%eth0": a zone index (%…) has no place in an address list',
    ]);
    expect(problemsOf(load({ allowedSources: [] }))).toEqual([
      'hooks.allowedSources: is empty, which would refuse every address; remove it to allow every address',
    ]);
  });
});

describe('gateway.trustedProxies', () => {
  it('takes addresses, CIDRs (host bits too) and the named ranges', () => {
    accepted(
      load(
        {},
        {
          gateway: {
            auth: { token: ADMIN },
            trustedProxies: ['127.0.0.1', '127.0.0.1/8', '::1/128', '10.0.0.0/8', 'loopback', 'uniquelocal'],
          },
        },
      ),
    );
  });

  it('refuses what is not one, naming the index, and a prefix of 0', () => {
    const problems = problemsOf(
      load(
        {},
        {
          gateway: {
            auth: { token: ADMIN },
            trustedProxies: ['proxy.local', '0.0.0.0/0', '10.0.0.0/255.0.0.0'],
          },
        },
      ),
    );
    expect(problems).toEqual([
      'gateway.trustedProxies[0]: "proxy.local" is not an IP address or CIDR (like 203.0.113.7, 10.0.0.0/8 or 2001:db8::/32), or one of loopback, linklocal, uniquelocal',
      'gateway.trustedProxies[1]: "0.0.0.0/0": a prefix length of 0 would believe X-Forwarded-For from every address',
      'gateway.trustedProxies[2]: "10.0.0.0/255.0.0.0": the prefix length must be a number from 0 to 32 for IPv4; write the mask as a prefix length (255.0.0.0 is /8), or one of loopback, linklocal, uniquelocal',
    ]);
  });
});

describe('parseInstant', () => {
  it.each([
    ['2026-12-31T23:59:59Z', Date.UTC(2026, 11, 31, 23, 59, 59)],
    ['2026-12-31T23:59:59.250Z', Date.UTC(2026, 11, 31, 23, 59, 59, 250)],
    ['2026-12-31T23:59Z', Date.UTC(2026, 11, 31, 23, 59)],
    ['2026-12-31t23:59:59z', Date.UTC(2026, 11, 31, 23, 59, 59)],
    ['2027-01-01T01:30:00+01:30', Date.UTC(2027, 0, 1, 0, 0)],
    ['2026-12-31T20:00:00-04:00', Date.UTC(2027, 0, 1, 0, 0)],
    ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29)],
  ])('reads %s', (text, ms) => {
    expect(parseInstant(text)).toBe(ms);
  });

  it.each([
    '2026-12-31',
    '2026-12-31T23:59:59',
    '2026-12-31T23:59:59+0200',
    '2026-12-31T23:59:59 Z',
    '2027-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-12-31T24:00:00Z',
    '2026-12-31T23:60:00Z',
    '2026-12-31T23:59:60Z',
    '2026-12-31T23:59:59+24:00',
    '+002026-12-31T23:59:59Z',
    '1767225600000',
    'Thu, 31 Dec 2026 23:59:59 GMT',
  ])('refuses %s', (text) => {
    expect(parseInstant(text)).toBeUndefined();
  });
});
