/**
 * Callback URLs and their origins (docs/callers.md, "Completion callbacks"). A callback URL is an
 * absolute http(s) URL without user info; origins are compared after
 * normalising — scheme, lower-case host, default port made explicit — so
 * `https://Example.com` and `https://example.com:443/x` share one origin.
 */

export type UrlCheck = { ok: true; url: URL } | { ok: false; problem: string };

export const NOT_AN_HTTP_URL = 'must be an absolute http(s) URL';

export function checkCallbackUrl(value: string): UrlCheck {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { ok: false, problem: NOT_AN_HTTP_URL };
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    return { ok: false, problem: NOT_AN_HTTP_URL };
  }
  // Credentials in a URL end up in logs and proxies, and `user@host` hides the real host.
  if (url.username !== '' || url.password !== '') {
    return { ok: false, problem: 'must not contain user info (user:password@)' };
  }
  return { ok: true, url };
}

/** `scheme://host:port`, host lower-case (the URL parser already does it), port always present. */
export function normalisedOrigin(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.protocol}//${url.hostname.toLowerCase()}:${port}`;
}

/**
 * An `allowedOrigins` entry: an origin, optionally with a trailing "/", and
 * nothing else — a path would suggest a prefix match that is not made.
 */
export function parseOrigin(value: string): { ok: true; origin: string } | { ok: false; problem: string } {
  const checked = checkCallbackUrl(value);
  const shape = 'must be an origin such as "https://example.com" or "http://127.0.0.1:8080" (no path)';
  if (!checked.ok)
    return { ok: false, problem: checked.problem === NOT_AN_HTTP_URL ? shape : checked.problem };
  const { url } = checked;
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || /[?#]/.test(value)) {
    return { ok: false, problem: shape };
  }
  return { ok: true, origin: normalisedOrigin(url) };
}

/** The allowed origins, normalised once; invalid entries (refused by the config check) are skipped. */
export function originSet(values: readonly string[]): ReadonlySet<string> {
  const set = new Set<string>();
  for (const value of values) {
    const parsed = parseOrigin(value);
    if (parsed.ok) set.add(parsed.origin);
  }
  return set;
}
