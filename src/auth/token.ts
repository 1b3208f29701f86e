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
/** `Bearer <token>` with one run of non-blank characters as the token (regex: native and cheap). */
const BEARER_TOKEN = /^Bearer[ \t]+(\S+)[ \t]*$/i;
/** The Bearer scheme, however malformed the rest. */
const BEARER_SCHEME = /^Bearer(?:[ \t]|$)/i;

const ambiguous = (detail: string) =>
  new HttpError('ambiguous_credentials', `ambiguous credentials: ${detail}; send the token once`);

/** Reads the token a request presents from its raw header list (node:http's `rawHeaders`). */
export type CredentialReader = (rawHeaders: readonly string[]) => string | undefined;

/**
 * The hook token a request presents: `Authorization: Bearer …`, else the
 * `x-agentgate-token` header. An `Authorization` header of another scheme
 * (e.g. Basic auth added by a proxy in front) is not a hook credential and
 * leaves `x-agentgate-token` in charge, as before. Throws 400
 * `ambiguous_credentials` for a repeated `Authorization` or `x-agentgate-token`
 * header, or a Bearer token and an `x-agentgate-token` that differ.
 */
export const presentedHookToken: CredentialReader = (rawHeaders) => presentedToken(rawHeaders, true);

/**
 * The admin API's credential: the token of the one `Authorization: Bearer …`
 * header (`x-agentgate-token` is not looked at). Throws 400
 * `ambiguous_credentials` when there are several.
 */
export const presentedBearerToken: CredentialReader = (rawHeaders) => presentedToken(rawHeaders, false);

/** The one reader behind both: one pass over the raw headers, on the hot path of every hook. */
function presentedToken(rawHeaders: readonly string[], tokenHeaderToo: boolean): string | undefined {
  let authorization: string | undefined;
  let tokenHeader: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (isHeader(name, AUTHORIZATION)) {
      if (authorization !== undefined) throw ambiguous('more than one Authorization header');
      authorization = rawHeaders[i + 1] as string;
    } else if (tokenHeaderToo && isHeader(name, TOKEN_HEADER)) {
      if (tokenHeader !== undefined) throw ambiguous(`more than one ${TOKEN_HEADER} header`);
      tokenHeader = rawHeaders[i + 1] as string;
    }
  }
  if (authorization !== undefined) {
    const match = BEARER_TOKEN.exec(authorization);
    if (match || BEARER_SCHEME.test(authorization)) {
      const token = match?.[1];
      if (tokenHeader !== undefined && tokenHeader !== token) {
        throw ambiguous(`Authorization and ${TOKEN_HEADER} carry different tokens`);
      }
      return token;
    }
  }
  return tokenHeader === undefined || tokenHeader.length === 0 ? undefined : tokenHeader;
}

/** `name` equals `lowercase` ignoring ASCII case; the usual spellings are settled by one comparison. */
function isHeader(name: string, lowercase: string): boolean {
  if (name.length !== lowercase.length) return false;
  if (name === lowercase) return true;
  for (let i = 0; i < lowercase.length; i++) {
    const code = name.charCodeAt(i);
    // Fold A–Z only; '-' and the other characters of these names must match exactly.
    if ((code >= 0x41 && code <= 0x5a ? code | 0x20 : code) !== lowercase.charCodeAt(i)) return false;
  }
  return true;
}

/** Whether a presented token is the expected one. */
export type TokenMatcher = (presented: string | undefined) => boolean;

/**
 * A matcher for one expected token, compared in constant time: the time taken
 * depends on the tokens' lengths, never on their contents (as Go's
 * `subtle.ConstantTimeCompare`). Only whether the length matches is revealed,
 * and generated tokens all have the same, public length.
 */
export function tokenMatcher(expected: string): TokenMatcher {
  const expectedBytes = Buffer.from(expected, 'utf8');
  return (presented) => {
    if (presented === undefined) return false;
    const presentedBytes = Buffer.from(presented, 'utf8');
    return presentedBytes.length === expectedBytes.length && timingSafeEqual(presentedBytes, expectedBytes);
  };
}
