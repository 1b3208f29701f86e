/**
 * The OIDC tokens Pub/Sub signs authenticated pushes with (Pub/Sub: "Authenticate push
 * subscriptions"), and the JWKS Google publishes their keys in (`GET /oauth2/v3/certs`,
 * `endpoints.oidcCerts`, no auth): one RSA key, kid `fake-google-1`.
 *
 * `idToken(claims, opts)` signs an RS256 JWT with that key: `iss` https://accounts.google.com,
 * `iat` now, `exp` in an hour, `email` `oidcEmail` (verified) unless `claims` says otherwise —
 * a claim set to `undefined` is left out; `opts.foreignKey` signs with a key the JWKS does
 * not hold, `opts.kid` names another key id, `opts.alg` writes another alg into the header.
 */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';

export const OIDC_KID = 'fake-google-1';
/** The service account the fake's ID tokens name by default. */
export const OIDC_EMAIL = 'push@fake-project.iam.gserviceaccount.com';

export interface IdTokenOptions {
  foreignKey?: boolean;
  kid?: string;
  alg?: string;
}

export interface FakeOidc {
  /** What `GET /oauth2/v3/certs` serves. */
  jwks: { keys: object[] };
  idToken(claims: Record<string, unknown>, opts?: IdTokenOptions): string;
}

export function createOidc(): FakeOidc {
  // The key the JWKS publishes, and a stranger's.
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreignKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = {
    keys: [{ ...signingKey.publicKey.export({ format: 'jwk' }), kid: OIDC_KID, alg: 'RS256', use: 'sig' }],
  };
  return {
    jwks,
    idToken: (claims, opts = {}) =>
      signJwt(claims, opts, (opts.foreignKey ? foreignKey : signingKey).privateKey),
  };
}

function signJwt(claims: Record<string, unknown>, opts: IdTokenOptions, key: KeyObject): string {
  const now = Math.floor(Date.now() / 1000);
  const merged: Record<string, unknown> = {
    iss: 'https://accounts.google.com',
    sub: '112233445566778899000',
    email: OIDC_EMAIL,
    email_verified: true,
    iat: now,
    exp: now + 3600,
    ...claims,
  };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = { alg: opts.alg ?? 'RS256', kid: opts.kid ?? OIDC_KID, typ: 'JWT' };
  const unsigned = `${part(header)}.${part(merged)}`;
  return `${unsigned}.${sign('RSA-SHA256', Buffer.from(unsigned), key).toString('base64url')}`;
}
