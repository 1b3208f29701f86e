/**
 * Verifies the OIDC token Pub/Sub attaches to authenticated pushes
 * (`Authorization: Bearer <JWT>`, RS256, signed by Google) with `jose`: the
 * signature against the JWKS at `hooks.gmail.endpoints.oidcCerts` (cached,
 * re-read when a token names an unknown key), and every registered claim —
 * issuer, audience (always required), exp, nbf and iat within a small clock
 * tolerance — plus the service account's verified email when one is configured.
 */
import {
  createRemoteJWKSet,
  customFetch,
  errors,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';

const ISSUERS = ['https://accounts.google.com', 'accounts.google.com'];
/** Clock skew allowed between Google and this host, seconds. */
const CLOCK_TOLERANCE_S = 60;
/** Google's ID tokens live one hour; an older `iat` is not a token Google would still send. */
const MAX_TOKEN_AGE_S = 3600;
const JWKS_TIMEOUT_MS = 10_000;

/** The token is refused: the push is answered 401 and counts toward the lockout. */
export class OidcRejected extends Error {}

export interface OidcOptions {
  certsUrl: string;
  /** The `aud` Google puts in the token: the subscription's configured audience (or its push endpoint). */
  audience: string;
  /** When set, `email` must be this and `email_verified` true. */
  email?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

export class OidcVerifier {
  private readonly keys: JWTVerifyGetKey;

  constructor(private readonly options: OidcOptions) {
    this.keys = createRemoteJWKSet(new URL(options.certsUrl), {
      timeoutDuration: JWKS_TIMEOUT_MS,
      ...(options.fetch ? { [customFetch]: options.fetch } : {}),
    });
  }

  async verify(authorization: string | undefined): Promise<void> {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) throw new OidcRejected('missing OIDC bearer token');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, this.keys, {
        algorithms: ['RS256'],
        issuer: ISSUERS,
        audience: this.options.audience,
        requiredClaims: ['iss', 'aud', 'exp', 'iat'],
        clockTolerance: CLOCK_TOLERANCE_S,
        maxTokenAge: MAX_TOKEN_AGE_S,
        currentDate: this.options.now ? new Date(this.options.now()) : undefined,
      }));
    } catch (error) {
      throw rejection(error);
    }
    const { email } = this.options;
    if (email !== undefined && (claims.email !== email || claims.email_verified !== true)) {
      throw new OidcRejected('OIDC token is not from hooks.gmail.oidc.email');
    }
  }
}

/**
 * A token fault becomes OidcRejected (401); failing to read Google's keys stays
 * an ordinary error (503), so Pub/Sub delivers the push again later.
 */
function rejection(error: unknown): Error {
  if (error instanceof errors.JWTClaimValidationFailed || error instanceof errors.JWTExpired) {
    return new OidcRejected(claimMessage(error.claim, error.reason, error.message));
  }
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return new OidcRejected('OIDC token is signed by an unknown key');
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new OidcRejected('OIDC token signature does not match');
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return new OidcRejected('OIDC token is not RS256');
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return new OidcRejected('malformed OIDC token');
  }
  // The rest — a key download that failed (refused, non-200, not JSON) — is not the token's fault.
  return new Error(`cannot verify the OIDC token: ${(error as Error).message}`);
}

function claimMessage(claim: string, reason: string, detail: string): string {
  if (reason === 'missing') return `OIDC token has no ${claim} claim`;
  switch (claim) {
    case 'iss':
      return 'OIDC token is not issued by Google';
    case 'aud':
      return 'OIDC token audience does not match hooks.gmail.oidc.audience';
    case 'exp':
      return 'OIDC token has expired';
    case 'nbf':
      return 'OIDC token is not valid yet (nbf)';
    case 'iat':
      return `OIDC token issue time is not plausible (${detail})`;
    default:
      return `OIDC token claim ${claim} is invalid`;
  }
}
