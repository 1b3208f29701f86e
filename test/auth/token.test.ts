/**
 * Reading the presented token from the raw header list (docs/authentication.md,
 * "How credentials are read"): a repeated or disagreeing credential is refused
 * 400 `ambiguous_credentials`, never picked or joined.
 */
import { describe, expect, it } from 'vitest';
import { presentedBearerToken, presentedHookToken } from '../../src/auth/token.js';
import { HttpError } from '../../src/http/errors.js';

function ambiguity(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).statusCode).toBe(400);
    expect((error as HttpError).code).toBe('ambiguous_credentials');
    return (error as HttpError).message;
  }
}

describe('presentedHookToken', () => {
  it('reads Bearer, else x-agentgate-token, header names in any case', () => {
    expect(presentedHookToken(['Authorization', 'Bearer abc'])).toBe('abc');
    expect(presentedHookToken(['AUTHORIZATION', 'bearer \t abc \t'])).toBe('abc');
    expect(presentedHookToken(['X-AgentGate-Token', 'abc'])).toBe('abc');
    expect(presentedHookToken(['Host', 'x'])).toBeUndefined();
    expect(presentedHookToken(['x-agentgate-token', ''])).toBeUndefined();
  });

  it('takes a malformed Bearer header as no token', () => {
    for (const value of ['Bearer', 'Bearer ', 'Bearer a b', 'Bearerabc']) {
      expect(presentedHookToken(['authorization', value])).toBeUndefined();
    }
  });

  it('leaves x-agentgate-token in charge next to an Authorization of another scheme', () => {
    expect(presentedHookToken(['authorization', 'Basic dXNlcjpwYXNz', 'x-agentgate-token', 'abc'])).toBe(
      'abc',
    );
  });

  it('accepts the same token in both headers', () => {
    expect(presentedHookToken(['authorization', 'Bearer abc', 'x-agentgate-token', 'abc'])).toBe('abc');
  });

  it('refuses repeated credential headers and disagreeing ones', () => {
    expect(
      ambiguity(() => presentedHookToken(['authorization', 'Bearer a', 'Authorization', 'Bearer a'])),
    ).toMatch(/more than one Authorization header/);
    expect(
      ambiguity(() => presentedHookToken(['authorization', 'Basic x', 'authorization', 'Bearer a'])),
    ).toBeDefined();
    expect(ambiguity(() => presentedHookToken(['x-agentgate-token', 'a', 'X-Agentgate-Token', 'a']))).toMatch(
      /more than one x-agentgate-token header/,
    );
    expect(
      ambiguity(() => presentedHookToken(['authorization', 'Bearer a', 'x-agentgate-token', 'b'])),
    ).toMatch(/carry different tokens/);
    expect(
      ambiguity(() => presentedHookToken(['authorization', 'Bearer', 'x-agentgate-token', 'b'])),
    ).toBeDefined();
  });
});

describe('presentedBearerToken (admin API)', () => {
  it('reads one Bearer header and ignores x-agentgate-token', () => {
    expect(presentedBearerToken(['authorization', 'Bearer abc', 'x-agentgate-token', 'other'])).toBe('abc');
    expect(presentedBearerToken(['x-agentgate-token', 'abc'])).toBeUndefined();
    expect(presentedBearerToken(['authorization', 'Basic abc'])).toBeUndefined();
  });

  it('refuses two Authorization headers', () => {
    expect(
      ambiguity(() => presentedBearerToken(['authorization', 'Bearer a', 'authorization', 'Bearer a'])),
    ).toMatch(/more than one Authorization header/);
  });
});
