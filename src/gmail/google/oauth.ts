/**
 * Google OAuth 2.0 for an installed app, through google-auth-library's
 * OAuth2Client (its token endpoint and consent page come from
 * `hooks.gmail.endpoints`, so the loopback fake stands in for Google): access
 * tokens from a stored refresh token (cached until a minute before they expire,
 * one refresh shared by concurrent callers), and the consent flow's two halves
 * (authorization URL with PKCE S256, code exchange) used by `agentgate hooks
 * gmail setup`.
 *
 * Refused credentials (revoked or expired refresh token, unknown client) are a
 * GoogleAuthError: retrying will not help, the user must run setup again. Anything else
 * (network, 5xx — after the library's own short retries) is a plain Error the caller may
 * retry. No message carries a secret: the library's errors (whose request config holds
 * the client secret) never leave this file.
 */
import { CodeChallengeMethod, type Credentials, OAuth2Client } from 'google-auth-library';
import { DEFAULT_TIMEOUT_MS } from '../../http/outbound.js';
import { redact } from './redact.js';

export const GMAIL_READONLY_SCOPE = 'https://www.googleapis.com/auth/gmail.readonly';
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

interface ClientOptions {
  clientId: string;
  clientSecret: string;
  tokenUrl: string;
  authUrl?: string;
  redirectUri?: string;
  fetch?: typeof fetch;
}

function oauthClient(opts: ClientOptions): OAuth2Client {
  return new OAuth2Client({
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    redirectUri: opts.redirectUri,
    endpoints: {
      oauth2TokenUrl: opts.tokenUrl,
      oauth2AuthBaseUrl: opts.authUrl ?? DEFAULT_AUTH_URL,
    },
    eagerRefreshThresholdMillis: EXPIRY_MARGIN_MS,
    // Node's own fetch: gaxios would otherwise load node-fetch on the first request.
    transporterOptions: { timeout: DEFAULT_TIMEOUT_MS, fetchImplementation: opts.fetch ?? fetch },
  });
}

/** The error shape google-auth-library's transport (gaxios) throws, as far as it is read here. */
interface TransportError {
  status?: number;
  response?: { status?: number; statusText?: string; data?: unknown };
  code?: string | number;
  name?: string;
  message?: string;
  cause?: unknown;
}

/** The first `code` on the cause chain (fetch wraps ECONNREFUSED two levels down). */
function causeCode(error: unknown): string | undefined {
  for (let current = error as TransportError | undefined, depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string' && /^E[A-Z]+$/.test(current.code)) return current.code;
    current = current.cause as TransportError | undefined;
  }
  return undefined;
}

/** A secret-free error for a failed token request: GoogleAuthError when the credentials are refused. */
function tokenError(what: string, error: unknown): Error {
  const failure = error as TransportError;
  const status = failure?.response?.status ?? failure?.status;
  if (status === undefined) {
    const reason =
      failure?.name === 'TimeoutError' || /timeout/i.test(failure?.message ?? '')
        ? 'timed out'
        : (causeCode(error) ?? failure?.message ?? String(error));
    return new Error(redact(`${what} failed: ${reason}`));
  }
  const data = (failure.response?.data ?? {}) as { error?: unknown; error_description?: unknown };
  const code = typeof data.error === 'string' ? data.error : undefined;
  const description = typeof data.error_description === 'string' ? data.error_description : undefined;
  const detail = [code, description].filter(Boolean).join(': ') || failure.response?.statusText || 'error';
  const message = redact(`${what} refused: HTTP ${status} ${detail}`);
  return code && PERMANENT.has(code) ? new GoogleAuthError(message) : new Error(message);
}

export class GoogleAuth {
  private readonly client: OAuth2Client;

  constructor(
    private readonly credentials: GoogleCredentials,
    tokenUrl: string,
    options: { fetch?: typeof fetch } = {},
  ) {
    this.client = oauthClient({
      clientId: credentials.client_id,
      clientSecret: credentials.client_secret,
      tokenUrl,
      fetch: options.fetch,
    });
    this.client.setCredentials({ refresh_token: credentials.refresh_token });
  }

  /** A valid access token; concurrent callers share one refresh. */
  async accessToken(): Promise<string> {
    let token: string | null | undefined;
    try {
      ({ token } = await this.client.getAccessToken());
    } catch (error) {
      throw tokenError('Google token refresh', error);
    }
    if (!token) throw new Error('Google token refresh: the answer carries no access_token');
    return token;
  }

  /** Forget the cached token (Google answered 401 with it). */
  invalidate(): void {
    this.client.setCredentials({ refresh_token: this.credentials.refresh_token });
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
  const client = oauthClient({
    clientId: opts.clientId,
    clientSecret: '',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    authUrl: opts.authUrl,
    redirectUri: opts.redirectUri,
  });
  return client.generateAuthUrl({
    access_type: 'offline',
    prompt: 'consent',
    scope: opts.scope,
    state: opts.state,
    code_challenge: opts.codeChallenge,
    code_challenge_method: CodeChallengeMethod.S256,
  });
}

/** A PKCE verifier (RFC 7636: 43–128 unreserved chars) and its S256 challenge. */
export async function createPkcePair(): Promise<{ codeVerifier: string; codeChallenge: string }> {
  const { codeVerifier, codeChallenge } = await new OAuth2Client().generateCodeVerifierAsync();
  if (!codeChallenge) throw new Error('google-auth-library produced no PKCE challenge');
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
  const client = oauthClient(opts);
  let tokens: Credentials;
  try {
    ({ tokens } = await client.getToken({
      code: opts.code,
      codeVerifier: opts.codeVerifier,
      redirect_uri: opts.redirectUri,
    }));
  } catch (error) {
    throw tokenError('Google authorization code exchange', error);
  }
  if (typeof tokens.access_token !== 'string' || tokens.access_token === '') {
    throw new Error('Google authorization code exchange: the answer carries no access_token');
  }
  if (typeof tokens.refresh_token !== 'string' || tokens.refresh_token === '') {
    throw new GoogleAuthError(
      'Google issued no refresh token; remove agentgate from https://myaccount.google.com/permissions and retry',
    );
  }
  // The library turns expires_in into an absolute expiry_date; hand back the lifetime.
  const expiresIn =
    typeof tokens.expiry_date === 'number' ? Math.round((tokens.expiry_date - Date.now()) / 1000) : 3600;
  return { refresh_token: tokens.refresh_token, access_token: tokens.access_token, expires_in: expiresIn };
}
