/**
 * Google OAuth 2.0 for an installed app: access tokens from a stored refresh token
 * (cached until shortly before they expire), and the consent flow's two halves
 * (authorization URL with PKCE, code exchange) used by `agentgate hooks gmail setup`.
 *
 * Refused credentials (revoked or expired refresh token, unknown client) are a
 * GoogleAuthError: retrying will not help, the user must run setup again. Anything else
 * (network, 5xx) is a plain Error the caller may retry. No message carries a secret.
 */
import { createHash, randomBytes } from 'node:crypto';
import { DEFAULT_TIMEOUT_MS, networkError, parseJson, redact } from './http.js';

export const GMAIL_READONLY_SCOPE = 'https://www.googleapis.com/auth/gmail.readonly';
export const PUBSUB_SCOPE = 'https://www.googleapis.com/auth/pubsub';
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const DEFAULT_AUTH_URL = 'https://accounts.google.com/o/oauth2/v2/auth';

export interface GoogleCredentials {
  client_id: string;
  client_secret: string;
  refresh_token: string;
}

/** Google refused the credentials themselves (invalid_grant, invalid_client, …): permanent. */
export class GoogleAuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GoogleAuthError';
  }
}

/** OAuth error codes that mean "these credentials will never work", per RFC 6749 §5.2. */
const PERMANENT = new Set(['invalid_grant', 'invalid_client', 'unauthorized_client', 'invalid_scope']);

/** Refresh this long before Google's expiry, so a token never dies mid-request. */
const EXPIRY_MARGIN_MS = 60_000;

interface TokenAnswer {
  access_token?: string;
  expires_in?: number;
  refresh_token?: string;
  error?: string;
  error_description?: string;
}

/** POSTs a form to the token endpoint and returns the answer, or throws a secret-free error. */
async function postToken(
  tokenUrl: string,
  form: Record<string, string>,
  fetchImpl: typeof fetch,
  what: string,
): Promise<TokenAnswer> {
  let response: Response;
  let text: string;
  try {
    response = await fetchImpl(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(DEFAULT_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    throw networkError(what, error);
  }
  const answer = (parseJson(text) ?? {}) as TokenAnswer;
  if (!response.ok) {
    const code = typeof answer.error === 'string' ? answer.error : undefined;
    const detail = [code, answer.error_description].filter(Boolean).join(': ') || response.statusText;
    const message = redact(`${what} refused: HTTP ${response.status} ${detail}`);
    if (code && PERMANENT.has(code)) throw new GoogleAuthError(message);
    throw new Error(message);
  }
  if (typeof answer.access_token !== 'string' || answer.access_token === '') {
    throw new Error(`${what}: the answer carries no access_token`);
  }
  return answer;
}

export class GoogleAuth {
  private token: string | undefined;
  private expiresAt = 0;
  private pending: Promise<string> | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;

  constructor(
    private readonly credentials: GoogleCredentials,
    private readonly tokenUrl: string,
    options: { fetch?: typeof fetch; now?: () => number } = {},
  ) {
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.now = options.now ?? Date.now;
  }

  /** A valid access token; concurrent callers share one refresh. */
  accessToken(): Promise<string> {
    if (this.token && this.now() < this.expiresAt - EXPIRY_MARGIN_MS) return Promise.resolve(this.token);
    if (!this.pending) {
      this.pending = this.refresh().finally(() => {
        this.pending = undefined;
      });
    }
    return this.pending;
  }

  /** Forget the cached token (Google answered 401 with it). */
  invalidate(): void {
    this.token = undefined;
    this.expiresAt = 0;
  }

  private async refresh(): Promise<string> {
    const answer = await postToken(
      this.tokenUrl,
      {
        grant_type: 'refresh_token',
        client_id: this.credentials.client_id,
        client_secret: this.credentials.client_secret,
        refresh_token: this.credentials.refresh_token,
      },
      this.fetchImpl,
      'Google token refresh',
    );
    // Google always sends expires_in; an hour is its usual value should it ever not.
    const ttl = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 3600;
    this.token = answer.access_token as string;
    this.expiresAt = this.now() + ttl * 1000;
    return this.token;
  }
}

/** The consent page URL. `prompt=consent` makes Google issue a refresh token even on a repeat grant. */
export function authorizationUrl(opts: {
  clientId: string;
  redirectUri: string;
  scope: string[];
  state: string;
  codeChallenge: string;
  authUrl?: string;
}): string {
  const url = new URL(opts.authUrl ?? DEFAULT_AUTH_URL);
  const params: Record<string, string> = {
    client_id: opts.clientId,
    redirect_uri: opts.redirectUri,
    response_type: 'code',
    scope: opts.scope.join(' '),
    state: opts.state,
    code_challenge: opts.codeChallenge,
    code_challenge_method: 'S256',
    access_type: 'offline',
    prompt: 'consent',
  };
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
}

/** A PKCE verifier (RFC 7636: 43–128 unreserved chars) and its S256 challenge. */
export function createPkcePair(): { codeVerifier: string; codeChallenge: string } {
  const codeVerifier = randomBytes(48).toString('base64url');
  const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
  return { codeVerifier, codeChallenge };
}

/** Trades the consent redirect's `code` for tokens; a missing refresh token is an error (nothing to store). */
export async function exchangeCode(opts: {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
  fetch?: typeof fetch;
}): Promise<{ refresh_token: string; access_token: string; expires_in: number }> {
  const answer = await postToken(
    opts.tokenUrl,
    {
      grant_type: 'authorization_code',
      code: opts.code,
      client_id: opts.clientId,
      client_secret: opts.clientSecret,
      redirect_uri: opts.redirectUri,
      code_verifier: opts.codeVerifier,
    },
    opts.fetch ?? ((input, init) => fetch(input, init)),
    'Google authorization code exchange',
  );
  if (typeof answer.refresh_token !== 'string' || answer.refresh_token === '') {
    throw new GoogleAuthError(
      'Google issued no refresh token; remove agentgate from https://myaccount.google.com/permissions and retry',
    );
  }
  return {
    refresh_token: answer.refresh_token,
    access_token: answer.access_token as string,
    expires_in: typeof answer.expires_in === 'number' ? answer.expires_in : 3600,
  };
}
