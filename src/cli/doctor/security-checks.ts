/**
 * Doctor's checks of the config's security settings, read from the substituted
 * tree so they run even when another rule makes the config invalid:
 * token strength, token reuse, the listen address, request session keys.
 */
import { isIP } from 'node:net';
import type { ConfigSource } from './config-source.js';
import { stringAt, valueAt } from './config-source.js';
import { MIN_LENGTH, tokenStrength } from './token-strength.js';
import { type CheckResult, fail, ok, warn } from './types.js';

export function securityChecks(source: ConfigSource): CheckResult[] {
  const tree = source.tree;
  if (!tree) return [];
  return [
    hookTokenCheck(tree),
    adminTokenCheck(tree),
    tokenReuseCheck(tree),
    bindCheck(tree),
    sessionKeyCheck(tree),
  ].filter((check): check is CheckResult => check !== undefined);
}

function hookTokenCheck(tree: Record<string, unknown>): CheckResult | undefined {
  const name = 'hooks.token';
  const token = stringAt(tree, 'hooks.token');
  if (!token) {
    // The senders' own tokens (docs/senders.md) are each listed as `hook token <id>`.
    const others = valueAt(tree, 'hooks.tokens');
    if (Array.isArray(others) && others.length > 0) return undefined;
    return valueAt(tree, 'hooks.enabled') === true
      ? fail(
          name,
          'not set, and hooks.tokens is empty, but hooks.enabled is true: `agentgate run` refuses to start',
        )
      : undefined;
  }
  return strengthVerdict(name, token, 'the gateway refuses to start with it');
}

function adminTokenCheck(tree: Record<string, unknown>): CheckResult {
  const name = 'gateway.auth.token';
  const token = stringAt(tree, 'gateway.auth.token');
  if (!token) {
    return warn(
      name,
      'not set: the admin API (runs, retries, metrics, the dashboard and this CLI) is disabled',
    );
  }
  // The admin token guards more than the hooks (retries, every run's content): no excuse for a short one.
  return strengthVerdict(name, token, 'it guards the admin API');
}

function strengthVerdict(name: string, token: string, why: string): CheckResult {
  const strength = tokenStrength(token);
  if (strength.length < MIN_LENGTH) {
    return fail(
      name,
      `${strength.length} characters, under ${MIN_LENGTH}: ${why} (make one: openssl rand -hex 32)`,
    );
  }
  if (strength.weaknesses.length > 0) {
    return warn(name, `weak: ${strength.weaknesses.join(', ')} (make one: openssl rand -hex 32)`);
  }
  return ok(name, `${strength.length} characters, about ${strength.bits} bits of entropy`);
}

/**
 * Each token guards one door. The hook token equal to the admin token is refused at start
 * (docs/configuration.md), so it fails here too; the Gmail push token travels in a URL through Google's
 * systems and logs, so it must not open any other door either: also a fail. Each sender's token
 * (`hooks.tokens`, docs/senders.md) is its own door too, which `run` also enforces.
 */
function tokenReuseCheck(tree: Record<string, unknown>): CheckResult {
  const name = 'token reuse';
  const tokens: [string, string | undefined][] = [
    ['hooks.token', stringAt(tree, 'hooks.token')],
    ['gateway.auth.token', stringAt(tree, 'gateway.auth.token')],
    ['hooks.gmail.pushToken', stringAt(tree, 'hooks.gmail.pushToken')],
  ];
  const senders = valueAt(tree, 'hooks.tokens');
  if (Array.isArray(senders)) {
    senders.forEach((entry, index) => {
      const token = entry && typeof entry === 'object' ? (entry as Record<string, unknown>).token : undefined;
      tokens.push([`hooks.tokens[${index}].token`, typeof token === 'string' ? token : undefined]);
    });
  }
  const present = tokens.filter((entry): entry is [string, string] => !!entry[1]);
  const clashes: string[] = [];
  for (let i = 0; i < present.length; i++) {
    for (let j = i + 1; j < present.length; j++) {
      const [a, tokenA] = present[i] as [string, string];
      const [b, tokenB] = present[j] as [string, string];
      if (tokenA === tokenB) clashes.push(`${a} equals ${b}`);
    }
  }
  if (clashes.length > 0) return fail(name, `${clashes.join('; ')}: give each its own random token`);
  return ok(name, present.length > 1 ? 'each token is different' : 'nothing to compare');
}

/**
 * Off loopback, without trusted proxies, either the gateway faces clients directly (plain HTTP,
 * tokens readable on the wire) or a proxy in front makes every client share its address, so one
 * client's failed tokens lock everyone out. Both want a TLS proxy listed in trustedProxies.
 */
function bindCheck(tree: Record<string, unknown>): CheckResult {
  const name = 'gateway.bind';
  const bind = stringAt(tree, 'gateway.bind') ?? '127.0.0.1';
  const proxies = valueAt(tree, 'gateway.trustedProxies');
  const proxyList = Array.isArray(proxies) ? proxies.filter((p) => typeof p === 'string') : [];
  if (isLoopback(bind)) return ok(name, `${bind}: loopback only`);
  if (proxyList.length === 0) {
    return warn(
      name,
      `${bind} is reachable from other hosts and gateway.trustedProxies is empty: put a TLS reverse proxy in front and list it there (otherwise tokens cross the network in clear, or every client behind the proxy shares one address for the auth lockout)`,
    );
  }
  return ok(name, `${bind}, behind trusted proxies ${proxyList.join(', ')}`);
}

/** Request session keys let a caller pick the transcript it writes into: without prefixes, any of them. */
function sessionKeyCheck(tree: Record<string, unknown>): CheckResult {
  const name = 'session keys';
  if (valueAt(tree, 'hooks.allowRequestSessionKey') !== true) {
    return ok(name, 'requests cannot choose a session key (hooks.allowRequestSessionKey is false)');
  }
  const prefixes = valueAt(tree, 'hooks.allowedSessionKeyPrefixes');
  if (!Array.isArray(prefixes)) {
    return warn(
      name,
      'hooks.allowRequestSessionKey is true without hooks.allowedSessionKeyPrefixes: a caller can write into any session; allow only prefixes such as ["hook:"]',
    );
  }
  if (prefixes.includes('')) {
    return warn(
      name,
      'hooks.allowedSessionKeyPrefixes contains "", which allows every key; list real prefixes',
    );
  }
  return ok(
    name,
    `requests may choose keys starting with ${prefixes.map((p) => JSON.stringify(p)).join(', ') || '(none)'}`,
  );
}

export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost' || bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}
