/**
 * Reading the token a request presents, and comparing it with the expected one.
 *
 * Credentials are read from the raw header list: node:http keeps only the first
 * `Authorization` and joins repeated unknown headers such as `x-agentgate-token`
 * with ", ", so the parsed headers cannot tell a single credential from several.
 * Several are ambiguous — which one a proxy, a log or the gateway looks at
 * differs — so they are refused with 400 `ambiguous_credentials` rather than
 * picked or joined. That is a client error, not a failed guess: it does not
 * count toward the lockout.
 */
import { timingSafeEqual } from 'node:crypto';
import { HttpError } from '../http/errors.js';

export const TOKEN_HEADER = 'x-agentgate-token';
const AUTHORIZATION = 'authorization';
const BEARER = 'bearer';

const ambiguous = (detail: string) =>
  new HttpError(400, 'ambiguous_credentials', `ambiguous credentials: ${detail}; send the token once`);

/**
 * The hook token a request presents: `Authorization: Bearer …`, else the
 * `x-agentgate-token` header. An `Authorization` header of another scheme
 * (e.g. Basic auth added by a proxy in front) is not a hook credential and
 * leaves `x-agentgate-token` in charge, as before. Throws 400
 * `ambiguous_credentials` for a repeated `Authorization` or `x-agentgate-token`
 * header, or a Bearer token and an `x-agentgate-token` that differ.
 */
export function presentedHookToken(rawHeaders: readonly string[]): string | undefined {
  let authorization: string | undefined;
  let tokenHeader: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (isHeader(name, AUTHORIZATION)) {
      if (authorization !== undefined) throw ambiguous('more than one Authorization header');
      authorization = rawHeaders[i + 1] as string;
    } else if (isHeader(name, TOKEN_HEADER)) {
      if (tokenHeader !== undefined) throw ambiguous(`more than one ${TOKEN_HEADER} header`);
      tokenHeader = rawHeaders[i + 1] as string;
    }
  }
  if (authorization !== undefined && hasBearerScheme(authorization)) {
    const bearer = bearerToken(authorization);
    if (tokenHeader !== undefined && tokenHeader !== bearer) {
      throw ambiguous(`Authorization and ${TOKEN_HEADER} carry different tokens`);
    }
    return bearer;
  }
  return tokenHeader === undefined || tokenHeader.length === 0 ? undefined : tokenHeader;
}

/**
 * The admin API's credential: the token of the one `Authorization: Bearer …`
 * header. Throws 400 `ambiguous_credentials` when there are several.
 */
export function presentedBearerToken(rawHeaders: readonly string[]): string | undefined {
  let authorization: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (isHeader(rawHeaders[i] as string, AUTHORIZATION)) {
      if (authorization !== undefined) throw ambiguous('more than one Authorization header');
      authorization = rawHeaders[i + 1] as string;
    }
  }
  return authorization !== undefined && hasBearerScheme(authorization)
    ? bearerToken(authorization)
    : undefined;
}

/** `name` equals `lowercase` ignoring ASCII case, without allocating a lowercased copy. */
function isHeader(name: string, lowercase: string): boolean {
  return name.length === lowercase.length && startsWithIgnoringCase(name, lowercase);
}

function startsWithIgnoringCase(text: string, lowercase: string): boolean {
  if (text.length < lowercase.length) return false;
  for (let i = 0; i < lowercase.length; i++) {
    const code = text.charCodeAt(i);
    // Fold A–Z only; '-' and the other characters of these names must match exactly.
    if ((code >= 0x41 && code <= 0x5a ? code | 0x20 : code) !== lowercase.charCodeAt(i)) return false;
  }
  return true;
}

const isBlank = (code: number) => code === 0x20 || code === 0x09;

/** `Bearer` (any case) alone or followed by a space or tab. */
function hasBearerScheme(value: string): boolean {
  return (
    startsWithIgnoringCase(value, BEARER) &&
    (value.length === BEARER.length || isBlank(value.charCodeAt(BEARER.length)))
  );
}

/** The token of `Bearer <token>`: one run of non-blank characters, else undefined (malformed). */
function bearerToken(value: string): string | undefined {
  let start = BEARER.length;
  while (start < value.length && isBlank(value.charCodeAt(start))) start++;
  let end = start;
  while (end < value.length && !isBlank(value.charCodeAt(end))) end++;
  if (end === start) return undefined;
  for (let rest = end; rest < value.length; rest++) if (!isBlank(value.charCodeAt(rest))) return undefined;
  return value.slice(start, end);
}

/**
 * A matcher for one expected token, compared in constant time: the time taken
 * depends on the tokens' lengths, never on their contents (as Go's
 * `subtle.ConstantTimeCompare`). Only whether the length matches is revealed,
 * and generated tokens all have the same, public length.
 */
export function tokenMatcher(expected: string): (presented: string | undefined) => boolean {
  const expectedBytes = Buffer.from(expected, 'utf8');
  return (presented) => {
    if (presented === undefined) return false;
    const presentedBytes = Buffer.from(presented, 'utf8');
    return presentedBytes.length === expectedBytes.length && timingSafeEqual(presentedBytes, expectedBytes);
  };
}
