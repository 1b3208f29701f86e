/**
 * The receiver's check of Google's OIDC push token, against the JWKS the loopback
 * fake Google serves: every registered claim, the signer, the email, and what a
 * missing audience in the config does. The clock is injected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { OidcRejected, OidcVerifier } from '../../src/gmail/oidc.js';
import { type FakeGoogle, startFakeGoogle } from '../fakes/google.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';

const AUDIENCE = 'https://mail.example.com/gmail-pubsub';
/** The injected "now": a fixed instant, so the token times below are exact. */
const NOW_S = 1_900_000_000;

describe('OIDC push tokens', () => {
  let google: FakeGoogle;
  let verifier: OidcVerifier;
  const token = (claims: Record<string, unknown> = {}, opts?: Parameters<FakeGoogle['idToken']>[1]) =>
    `Bearer ${google.idToken({ aud: AUDIENCE, iat: NOW_S - 10, exp: NOW_S + 3590, ...claims }, opts)}`;

  beforeAll(async () => {
    google = await startFakeGoogle();
    verifier = new OidcVerifier({
      certsUrl: google.endpoints.oidcCerts,
      audience: AUDIENCE,
      email: google.oidcEmail,
      now: () => NOW_S * 1000,
    });
  });
  afterAll(() => google.close());

  it('accepts a token Google signed for this audience and service account', async () => {
    await expect(verifier.verify(token())).resolves.toBeUndefined();
  });

  it('accepts both spellings of Google as issuer, and an audience list that holds ours', async () => {
    await expect(verifier.verify(token({ iss: 'accounts.google.com' }))).resolves.toBeUndefined();
    await expect(verifier.verify(token({ aud: ['https://other', AUDIENCE] }))).resolves.toBeUndefined();
  });

  it('allows a minute of clock skew on exp, nbf and iat, and no more', async () => {
    await expect(verifier.verify(token({ exp: NOW_S - 30 }))).resolves.toBeUndefined();
    await expect(verifier.verify(token({ nbf: NOW_S + 30 }))).resolves.toBeUndefined();
    await expect(verifier.verify(token({ iat: NOW_S + 30 }))).resolves.toBeUndefined();
    await expect(verifier.verify(token({ exp: NOW_S - 90 }))).rejects.toThrow(/expired/);
  });

  it.each([
    ['no token', () => undefined, /missing/],
    ['a token that is not a bearer token', () => `Basic ${google.idToken({ aud: AUDIENCE })}`, /missing/],
    ['a wrong audience', () => token({ aud: 'https://evil.example' }), /audience/],
    ['no audience', () => token({ aud: undefined }), /no aud claim/],
    ['an expired token', () => token({ iat: NOW_S - 3000, exp: NOW_S - 3600 + 2990 }), /expired/],
    ['no exp', () => token({ exp: undefined }), /no exp claim/],
    ['a token not valid yet (nbf)', () => token({ nbf: NOW_S + 600 }), /nbf/],
    ['a token issued in the future (iat)', () => token({ iat: NOW_S + 600 }), /issue time/],
    ['a token issued too long ago (iat)', () => token({ iat: NOW_S - 7200 }), /issue time|expired/],
    ['no iat', () => token({ iat: undefined }), /no iat claim/],
    ['another issuer', () => token({ iss: 'https://evil.example' }), /issued by Google/],
    ['no issuer', () => token({ iss: undefined }), /no iss claim/],
    ['another email', () => token({ email: 'x@y.z' }), /email/],
    ['an unverified email', () => token({ email_verified: false }), /email/],
    ['another signer', () => token({}, { foreignKey: true }), /signature/],
    ['an unknown key id', () => token({}, { kid: 'k9' }), /unknown key/],
    ['an HMAC token', () => token({}, { alg: 'HS256' }), /RS256/],
    ['an unsigned token', () => token({}, { alg: 'none' }), /RS256|malformed/],
    ['garbage', () => 'Bearer not.a.jwt', /malformed/],
  ])('refuses %s', async (_name, header, reason) => {
    const attempt = verifier.verify(header());
    await expect(attempt).rejects.toThrow(OidcRejected);
    await expect(verifier.verify(header())).rejects.toThrow(reason);
  });

  it('checks email only when hooks.gmail.oidc.email is set', async () => {
    const anyAccount = new OidcVerifier({
      certsUrl: google.endpoints.oidcCerts,
      audience: AUDIENCE,
      now: () => NOW_S * 1000,
    });
    await expect(
      anyAccount.verify(token({ email: 'other@x.iam.gserviceaccount.com' })),
    ).resolves.toBeUndefined();
  });

  it("does not blame the token when Google's keys cannot be read (not OidcRejected, so the push is retried)", async () => {
    const broken = new OidcVerifier({
      certsUrl: `${google.url}/no-such-certs`,
      audience: AUDIENCE,
      now: () => NOW_S * 1000,
    });
    const attempt = broken.verify(token());
    await expect(attempt).rejects.toThrow(/cannot verify/);
    await expect(broken.verify(token())).rejects.not.toBeInstanceOf(OidcRejected);
  });
});

describe('hooks.gmail.oidc in the config', () => {
  const load = (oidc: unknown) =>
    loadConfigFile(
      writeConfig(tempDir('agentgate-oidc-'), { hooks: { gmail: { account: 'me@x.com', oidc } } }),
    );

  it('requires an audience whenever oidc is set', () => {
    for (const oidc of [{}, { email: 'push@p.iam.gserviceaccount.com' }]) {
      const loaded = load(oidc);
      expect(loaded.ok).toBe(false);
      if (!loaded.ok) expect(loaded.problems.join('\n')).toMatch(/^hooks\.gmail\.oidc\.audience: required/m);
    }
    const empty = load({ audience: '' });
    expect(empty.ok).toBe(false);
  });

  it('accepts an audience, with or without email', () => {
    expect(load({ audience: AUDIENCE }).ok).toBe(true);
    expect(load({ audience: AUDIENCE, email: 'push@p.iam.gserviceaccount.com' }).ok).toBe(true);
  });
});
