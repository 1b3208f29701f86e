/** The receiver's optional check of Google's OIDC push token, against locally generated keys. */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcRejected, OidcVerifier } from '../../src/gmail/oidc.js';

const AUDIENCE = 'https://mail.example.com/gmail-pubsub';
const EMAIL = 'push@my-proj.iam.gserviceaccount.com';

function jwt(key: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${part({ alg: 'RS256', kid, typ: 'JWT' })}.${part(claims)}`;
  return `${unsigned}.${sign('RSA-SHA256', Buffer.from(unsigned), key).toString('base64url')}`;
}

describe('OIDC push tokens', () => {
  const google = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let server: Server;
  let verifier: OidcVerifier;
  const now = () => Math.floor(Date.now() / 1000);
  const good = () => ({
    iss: 'https://accounts.google.com',
    aud: AUDIENCE,
    email: EMAIL,
    email_verified: true,
    exp: now() + 3600,
  });

  beforeAll(async () => {
    const jwk = { ...google.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const certsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/certs`;
    verifier = new OidcVerifier({ certsUrl, audience: AUDIENCE, email: EMAIL });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('accepts a token Google signed for this audience and service account', async () => {
    await expect(verifier.verify(`Bearer ${jwt(google.privateKey, 'k1', good())}`)).resolves.toBeUndefined();
  });

  it.each([
    ['no token', () => undefined, /missing/],
    [
      'a wrong audience',
      () => `Bearer ${jwt(google.privateKey, 'k1', { ...good(), aud: 'https://evil' })}`,
      /audience/,
    ],
    [
      'an expired token',
      () => `Bearer ${jwt(google.privateKey, 'k1', { ...good(), exp: now() - 3600 })}`,
      /expired/,
    ],
    ['another signer', () => `Bearer ${jwt(stranger.privateKey, 'k1', good())}`, /signature/],
    ['another email', () => `Bearer ${jwt(google.privateKey, 'k1', { ...good(), email: 'x@y.z' })}`, /email/],
    [
      'another issuer',
      () => `Bearer ${jwt(google.privateKey, 'k1', { ...good(), iss: 'https://evil' })}`,
      /issued/,
    ],
    ['an unknown key id', () => `Bearer ${jwt(google.privateKey, 'k9', good())}`, /unknown key/],
    ['garbage', () => 'Bearer not.a.jwt', /malformed/],
  ])('refuses %s', async (_name, header, reason) => {
    await expect(verifier.verify(header())).rejects.toThrow(OidcRejected);
    await expect(verifier.verify(header())).rejects.toThrow(reason);
  });
});
