/**
 * Google's OAuth 2.0 endpoints as an installed app uses them ("OAuth 2.0 for Mobile &
 * Desktop Apps": loopback redirect, PKCE), with the errors Google documents for them.
 *
 * `POST /token` (form or JSON): `grant_type=refresh_token` with the known client
 * (`clientId`/`clientSecret`, else 401 `invalid_client`) and refresh token (else, or after
 * `revokeRefreshToken()`, 400 `invalid_grant`) → `{access_token, expires_in, scope,
 * token_type}`; `grant_type=authorization_code` for a code from the consent page
 * `GET /o/oauth2/v2/auth` (302 to `redirect_uri?code=…&state=…`, or `error=access_denied`
 * while `denyConsent` is set), checking redirect_uri and the PKCE S256 verifier → also
 * `refresh_token`. Errors here are OAuth's `{error, error_description}` (RFC 6749 §5.2),
 * not Google's API error body.
 *
 * Every API route wants `Authorization: Bearer` with an unexpired access token issued
 * here (`accessTokenTtl` s); `revokeAccessTokens()` forgets all issued ones.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { GoogleState } from './state.js';

/** The token endpoint's answer: OAuth's own body, not Google's API error body. */
export function tokenEndpoint(
  state: GoogleState,
  params: Record<string, string>,
): { status: number; body: unknown } {
  const grant = params.grant_type ?? '';
  const record = { grant_type: grant, client_id: params.client_id ?? '' };
  const fail = (status: number, error: string, description: string) => {
    state.tokenRequests.push({ ...record, status, error });
    return { status, body: { error, error_description: description } };
  };
  if (!params.client_id) return fail(400, 'invalid_request', 'Could not determine client ID from request.');
  if (params.client_id !== state.clientId)
    return fail(401, 'invalid_client', 'The OAuth client was not found.');
  if (params.client_secret !== state.clientSecret) return fail(401, 'invalid_client', 'Unauthorized');
  const ttl = state.accessTokenTtl;
  const scope = 'https://www.googleapis.com/auth/gmail.readonly';
  if (grant === 'refresh_token') {
    if (!params.refresh_token)
      return fail(400, 'invalid_request', 'Missing required parameter: refresh_token');
    if (params.refresh_token !== state.refreshToken || state.refreshRevoked) {
      return fail(400, 'invalid_grant', 'Token has been expired or revoked.');
    }
    state.tokenRequests.push({ ...record, status: 200 });
    return {
      status: 200,
      body: { access_token: issueAccessToken(state), expires_in: ttl, scope, token_type: 'Bearer' },
    };
  }
  if (grant === 'authorization_code') {
    const code = state.authCodes.get(params.code ?? '');
    if (!code) return fail(400, 'invalid_grant', 'Malformed auth code.');
    state.authCodes.delete(params.code ?? '');
    if (params.redirect_uri !== code.redirectUri) return fail(400, 'redirect_uri_mismatch', 'Bad Request');
    if (code.challenge) {
      const computed = createHash('sha256')
        .update(params.code_verifier ?? '')
        .digest('base64url');
      if (computed !== code.challenge) return fail(400, 'invalid_grant', 'Invalid code verifier.');
    }
    state.refreshRevoked = false;
    state.tokenRequests.push({ ...record, status: 200 });
    return {
      status: 200,
      body: {
        access_token: issueAccessToken(state),
        expires_in: ttl,
        refresh_token: state.refreshToken,
        scope: code.scope,
        token_type: 'Bearer',
      },
    };
  }
  return fail(400, 'unsupported_grant_type', `Invalid grant_type: ${grant}`);
}

/** The consent page: the user always agrees (unless denyConsent) and Google redirects back. */
export function consent(state: GoogleState, query: URLSearchParams, res: ServerResponse): void {
  const params = Object.fromEntries(query);
  state.authRequests.push(params);
  const redirect = params.redirect_uri;
  if (params.client_id !== state.clientId || !redirect) {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('Error 400: invalid_request');
    return;
  }
  const back = new URL(redirect);
  if (state.denyConsent) back.searchParams.set('error', 'access_denied');
  else {
    if (
      params.response_type !== 'code' ||
      (params.code_challenge && params.code_challenge_method !== 'S256')
    ) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('Error 400: invalid_request');
      return;
    }
    const code = `4/0fake-code-${++state.counter}`;
    state.authCodes.set(code, {
      redirectUri: redirect,
      challenge: params.code_challenge,
      scope: params.scope ?? '',
    });
    back.searchParams.set('code', code);
    back.searchParams.set('scope', params.scope ?? '');
  }
  if (params.state !== undefined) back.searchParams.set('state', params.state);
  res.writeHead(302, { location: back.toString() }).end();
}

/** Whether an `Authorization` header carries an access token issued here and not yet expired. */
export function hasValidAccessToken(state: GoogleState, authorization: string | undefined): boolean {
  const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
  const expiry = token ? state.accessTokens.get(token) : undefined;
  return expiry !== undefined && expiry > Date.now();
}

export function revokeAccessTokens(state: GoogleState): void {
  state.accessTokens.clear();
}

/** As when the user removes the app's access: the refresh token and every access token stop working. */
export function revokeRefreshToken(state: GoogleState): void {
  state.refreshRevoked = true;
  state.accessTokens.clear();
}

/** Form parameters, as RFC 6749 sends them; a JSON object is read too, so a client sending one gets the same answers. */
export function parseTokenParams(raw: string, contentType: string | undefined): Record<string, string> {
  if ((contentType ?? '').includes('application/json')) {
    try {
      const parsed = JSON.parse(raw) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

function issueAccessToken(state: GoogleState): string {
  const token = `ya29.fake-${++state.counter}-${randomBytes(6).toString('hex')}`;
  state.accessTokens.set(token, Date.now() + state.accessTokenTtl * 1000);
  return token;
}
