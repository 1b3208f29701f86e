/**
 * Doctor's list of hook tokens (docs/senders.md; docs/operating.md, "`agentgate doctor`"):
 * one line per token, by id — `default` for `hooks.token` — with the hooks it opens, its
 * expiry and the addresses it may come from; never the token. A token that expires within
 * 7 days warns, one already expired warns differently (it opens nothing), and a weak token
 * of `hooks.tokens` warns as `hooks.token`'s own check does. `hook sources` shows
 * `hooks.allowedSources` when it is set.
 */
import { parseInstant } from '../../config/hook-token-rules.js';
import { DEFAULT_TOKEN_ID, type RawConfig } from '../../config/schema.js';
import type { ConfigSource } from './config-source.js';
import { MIN_LENGTH, tokenStrength } from './token-strength.js';
import type { CheckResult, Verdict } from './types.js';

/** A token expiring sooner than this warns. */
export const EXPIRY_WARNING_MS = 7 * 86_400_000;

export function hookTokenChecks(source: ConfigSource, now = Date.now()): CheckResult[] {
  const hooks = source.raw?.hooks;
  if (!hooks) return [];
  const checks: CheckResult[] = [];
  if (hooks.allowedSources !== undefined) {
    checks.push({
      name: 'hook sources',
      status: 'ok',
      message: `every hook request must come from ${list(hooks.allowedSources)} (hooks.allowedSources)`,
    });
  }
  if (hooks.token !== undefined) checks.push(tokenLine(hooks, { id: DEFAULT_TOKEN_ID }, now));
  for (const entry of hooks.tokens) checks.push(tokenLine(hooks, entry, now, entry.token));
  return checks;
}

type Entry = Partial<RawConfig['hooks']['tokens'][number]> & { id: string };

/** `token` is given for `hooks.tokens` entries only: `hooks.token` has its own strength line. */
function tokenLine(hooks: RawConfig['hooks'], entry: Entry, now: number, token?: string): CheckResult {
  let status: Verdict = 'ok';
  const worsen = (to: Verdict) => {
    if (to === 'fail' || (to === 'warn' && status === 'ok')) status = to;
  };
  const parts: string[] = [];

  parts.push(entry.hooks ? `opens ${entry.hooks.join(', ')}` : 'opens every hook');

  if (entry.notAfter === undefined) {
    parts.push('never expires');
  } else {
    const notAfter = parseInstant(entry.notAfter);
    if (notAfter === undefined) {
      worsen('fail');
      parts.push(`notAfter ${JSON.stringify(entry.notAfter)} is not a date-time \`agentgate run\` accepts`);
    } else if (notAfter <= now) {
      worsen('warn');
      parts.push(`expired ${iso(notAfter)}: it opens nothing (remove it, or give the sender a new token)`);
    } else if (notAfter - now < EXPIRY_WARNING_MS) {
      worsen('warn');
      parts.push(
        `expires ${iso(notAfter)}, in ${remaining(notAfter - now)}: give the sender a new token before then`,
      );
    } else {
      parts.push(`expires ${iso(notAfter)}`);
    }
  }

  if (entry.allowedSources !== undefined) parts.push(`from ${list(entry.allowedSources)}`);
  else if (hooks.allowedSources !== undefined) parts.push('from wherever hooks.allowedSources allows');
  else parts.push('from any address');

  if (token !== undefined) {
    const strength = tokenStrength(token);
    if (strength.length < MIN_LENGTH) {
      worsen('fail');
      parts.push(`${strength.length} characters, under ${MIN_LENGTH}: the gateway refuses to start with it`);
    } else if (strength.weaknesses.length > 0) {
      worsen('warn');
      parts.push(`weak: ${strength.weaknesses.join(', ')} (make one: openssl rand -hex 32)`);
    }
  }
  return { name: `hook token ${entry.id}`, status, message: parts.join('; ') };
}

const iso = (ms: number) => new Date(ms).toISOString();
const list = (entries: readonly string[]) =>
  entries.length > 0 ? entries.join(', ') : 'nowhere (empty list)';

/** "3 days", "1 day", "5 hours", "12 minutes": what is left, rounded down. */
function remaining(ms: number): string {
  const unit = (count: number, name: string) => `${count} ${name}${count === 1 ? '' : 's'}`;
  if (ms >= 86_400_000) return unit(Math.floor(ms / 86_400_000), 'day');
  if (ms >= 3_600_000) return unit(Math.floor(ms / 3_600_000), 'hour');
  return unit(Math.max(1, Math.floor(ms / 60_000)), 'minute');
}
