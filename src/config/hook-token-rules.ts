/**
 * The configuration rules of hook tokens and address lists (docs/configuration.md,
 * "Hook tokens"; docs/senders.md): every `hooks.tokens` entry has its own id (`default`
 * is `hooks.token`'s), a token of at least 16 characters that no other token shares, a
 * scope naming hooks that exist, an expiry the gateway can read, and source lists of
 * addresses or CIDRs. `gateway.trustedProxies` is read with the same parser.
 *
 * A problem names the key path and never holds a token.
 */
import { parseCidr } from '../util/cidr.js';
import { DEFAULT_TOKEN_ID, type RawConfig, SIGNATURE_TOKEN_ID } from './schema.js';

export const MIN_HOOK_TOKEN_LENGTH = 16;
export const RECOMMENDED_TOKEN_LENGTH = 32;
/** `{hooks.path}/runs/{runId}` is the run status endpoint, so no mapping may take that name. */
export const RUNS_HOOK_NAME = 'runs';
/** The hooks every gateway has: `POST {hooks.path}/wake`, `/agent`, and `GET …/runs/{id}`. */
export const BUILT_IN_HOOK_NAMES = ['wake', 'agent', RUNS_HOOK_NAME] as const;

/** `2026-12-31T23:59:59Z`, `2026-12-31T23:59:59.5+02:00`, `2026-12-31T23:59Z`: date, time and zone. */
const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * An ISO 8601 date-time with a zone (`Z` or `±hh:mm`) as epoch ms; undefined when it is
 * not one, or names a day or time that does not exist (`2026-02-30`, `24:00`).
 */
export function parseInstant(text: string): number | undefined {
  const match = INSTANT.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second = '0', zoneHours = '0', zoneMinutes = '0'] = match.slice(1);
  const [y, mo, d] = [Number(year), Number(month), Number(day)];
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return undefined;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  if (Number(zoneHours) > 23 || Number(zoneMinutes) > 59) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The names a token's `hooks` may hold: the built-in hooks, every mapping's id, the enabled presets. */
export function hookNames(hooks: RawConfig['hooks']): string[] {
  const names: string[] = [...BUILT_IN_HOOK_NAMES];
  hooks.mappings.forEach((mapping, index) => {
    names.push(mapping.id ?? `mapping-${index}`);
  });
  names.push(...hooks.presets);
  return [...new Set(names)];
}

export function hookTokenRules(raw: RawConfig, now: number): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const { hooks } = raw;
  const names = hookNames(hooks);
  const firstWithId = new Map<string, number>();
  const firstWithToken = new Map<string, number>();
  let live = 0;

  hooks.tokens.forEach((entry, index) => {
    const at = `hooks.tokens[${index}]`;

    // --- id: unique, and not the one hooks.token goes by ---
    if (entry.id === DEFAULT_TOKEN_ID) {
      problems.push(`${at}.id: "${DEFAULT_TOKEN_ID}" is the id of hooks.token; choose another`);
    } else if (entry.id === SIGNATURE_TOKEN_ID) {
      problems.push(
        `${at}.id: "${SIGNATURE_TOKEN_ID}" names what signed senders send (auth: "signature"); choose another`,
      );
    } else {
      const first = firstWithId.get(entry.id);
      if (first !== undefined) {
        problems.push(`${at}.id: "${entry.id}" is also the id of hooks.tokens[${first}]; ids must be unique`);
      } else {
        firstWithId.set(entry.id, index);
      }
    }

    // --- token: long enough, and shared with no other door ---
    if (entry.token.length < MIN_HOOK_TOKEN_LENGTH) {
      problems.push(`${at}.token: must be at least ${MIN_HOOK_TOKEN_LENGTH} characters`);
    } else if (entry.token.length < RECOMMENDED_TOKEN_LENGTH) {
      warnings.push(
        `${at}.token: shorter than ${RECOMMENDED_TOKEN_LENGTH} characters; use a longer random token`,
      );
    }
    const sameAs = firstWithToken.get(entry.token);
    if (sameAs !== undefined) {
      problems.push(`${at}.token: the same as hooks.tokens[${sameAs}].token; give each sender its own token`);
    } else {
      firstWithToken.set(entry.token, index);
    }
    if (hooks.token !== undefined && entry.token === hooks.token) {
      problems.push(`${at}.token: must differ from hooks.token; give each sender its own token`);
    }
    if (raw.gateway.auth.token !== undefined && entry.token === raw.gateway.auth.token) {
      problems.push(`${at}.token: must differ from gateway.auth.token (a hook token must be dedicated)`);
    }

    // --- hooks: each one that exists ---
    entry.hooks?.forEach((name, hookIndex) => {
      if (!names.includes(name)) {
        problems.push(
          `${at}.hooks[${hookIndex}]: "${name}" is not a hook; the hooks are ${names.join(', ')}`,
        );
      }
    });

    // --- notAfter: readable; in the past only a warning ---
    let expired = false;
    if (entry.notAfter !== undefined) {
      const notAfter = parseInstant(entry.notAfter);
      if (notAfter === undefined) {
        problems.push(
          `${at}.notAfter: ${JSON.stringify(entry.notAfter)} is not an ISO 8601 date-time with a zone, like "2026-12-31T23:59:59Z" or "2026-12-31T23:59:59+02:00"`,
        );
      } else if (notAfter <= now) {
        expired = true;
        warnings.push(`${at}.notAfter: expired (${entry.notAfter}); it opens nothing`);
      }
    }
    if (!expired) live++;

    problems.push(...addressListProblems(`${at}.allowedSources`, entry.allowedSources));
  });

  problems.push(...addressListProblems('hooks.allowedSources', hooks.allowedSources));
  if (hooks.enabled && hooks.token === undefined && hooks.tokens.length > 0 && live === 0) {
    warnings.push('hooks.tokens: every token has expired and there is no hooks.token; every hook refuses');
  }
  return { problems, warnings };
}

/** An allowed-sources list: each entry an address or CIDR, and never empty (that would refuse everyone). */
export function addressListProblems(at: string, list: readonly string[] | undefined): string[] {
  if (list === undefined) return [];
  if (list.length === 0)
    return [`${at}: is empty, which would refuse every address; remove it to allow every address`];
  const problems: string[] = [];
  list.forEach((entry, index) => {
    const parsed = parseCidr(entry);
    if (!parsed.ok) problems.push(`${at}[${index}]: ${parsed.problem}`);
  });
  return problems;
}

/**
 * The ranges `gateway.trustedProxies` also takes by name (Fastify's `trustProxy`, which
 * reads the list, expands them).
 */
export const TRUSTED_PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'] as const;

/** `gateway.trustedProxies`: addresses, CIDRs with a prefix of at least 1, or the names above. */
export function trustedProxyProblems(list: readonly string[]): string[] {
  const problems: string[] = [];
  list.forEach((entry, index) => {
    if ((TRUSTED_PROXY_NAMES as readonly string[]).includes(entry)) return;
    const at = `gateway.trustedProxies[${index}]`;
    const parsed = parseCidr(entry);
    if (!parsed.ok) {
      problems.push(`${at}: ${parsed.problem}, or one of ${TRUSTED_PROXY_NAMES.join(', ')}`);
    } else if (parsed.cidr.prefix === 0) {
      problems.push(
        `${at}: ${JSON.stringify(entry)}: a prefix length of 0 would believe X-Forwarded-For from every address`,
      );
    }
  });
  return problems;
}
