/**
 * Verifies the OIDC token Pub/Sub attaches to authenticated pushes
 * (`Authorization: Bearer <JWT>`, RS256, signed by Google): signature against
 * Google's published keys, issuer, expiry, audience and the service account's
 * email. Keys are cached and re-read when a token names an unknown key.
 */
import { createPublicKey, type JsonWebKey, verify } from 'node:crypto';

export const GOOGLE_CERTS_URL = 'https://www.googleapis.com/oauth2/v3/certs';
const ISSUERS = new Set(['https://accounts.google.com', 'accounts.google.com']);
const LEEWAY_S = 60;
const KEYS_TTL_MS = 60 * 60_000;
const REFETCH_MIN_MS = 60_000;

export class OidcRejected extends Error {}

export interface OidcOptions {
  certsUrl: string;
  audience?: string;
  email?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

const json = (part: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));

export class OidcVerifier {
  private keys = new Map<string, ReturnType<typeof createPublicKey>>();
  private fetchedAt = 0;

  constructor(private readonly options: OidcOptions) {}

  async verify(authorization: string | undefined): Promise<void> {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) throw new OidcRejected('missing OIDC bearer token');
    const parts = token.split('.');
    if (parts.length !== 3) throw new OidcRejected('malformed OIDC token');
    const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
    let header: Record<string, unknown>;
    let claims: Record<string, unknown>;
    try {
      header = json(headerPart);
      claims = json(payloadPart);
    } catch {
      throw new OidcRejected('malformed OIDC token');
    }
    if (header.alg !== 'RS256' || typeof header.kid !== 'string')
      throw new OidcRejected('OIDC token is not RS256 with a key id');
    const key = await this.key(header.kid);
    const signed = verify(
      'RSA-SHA256',
      Buffer.from(`${headerPart}.${payloadPart}`),
      key,
      Buffer.from(signaturePart, 'base64url'),
    );
    if (!signed) throw new OidcRejected('OIDC token signature does not match');

    const now = Math.floor((this.options.now ?? Date.now)() / 1000);
    if (!ISSUERS.has(String(claims.iss))) throw new OidcRejected('OIDC token is not issued by Google');
    if (typeof claims.exp !== 'number' || claims.exp + LEEWAY_S < now)
      throw new OidcRejected('OIDC token has expired');
    if (this.options.audience !== undefined && claims.aud !== this.options.audience) {
      throw new OidcRejected('OIDC token audience does not match hooks.gmail.oidc.audience');
    }
    if (
      this.options.email !== undefined &&
      (claims.email !== this.options.email || claims.email_verified !== true)
    ) {
      throw new OidcRejected('OIDC token is not from hooks.gmail.oidc.email');
    }
  }

  private async key(kid: string): Promise<ReturnType<typeof createPublicKey>> {
    const now = Date.now();
    const stale = now - this.fetchedAt > KEYS_TTL_MS;
    if (stale || (!this.keys.has(kid) && now - this.fetchedAt > REFETCH_MIN_MS)) await this.refresh();
    const key = this.keys.get(kid);
    if (!key) throw new OidcRejected('OIDC token is signed by an unknown key');
    return key;
  }

  private async refresh(): Promise<void> {
    const response = await (this.options.fetch ?? fetch)(this.options.certsUrl, {
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`cannot read Google's signing keys (${response.status})`);
    const { keys } = (await response.json()) as { keys?: (JsonWebKey & { kid?: string })[] };
    const next = new Map<string, ReturnType<typeof createPublicKey>>();
    for (const jwk of keys ?? []) {
      if (jwk.kid && jwk.kty === 'RSA') next.set(jwk.kid, createPublicKey({ key: jwk, format: 'jwk' }));
    }
    this.keys = next;
    this.fetchedAt = Date.now();
  }
}
