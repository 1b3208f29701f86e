/**
 * A token in the query string is refused (docs/authentication.md): any key
 * that reads `token` ignoring ASCII case, percent-encoding and a trailing
 * bracket part.
 */
import { describe, expect, it } from 'vitest';
import { queryHasToken } from '../../src/auth/query-token.js';
import { OTHER_KEYS, TOKEN_KEYS } from './token-keys.js';

describe('queryHasToken', () => {
  it.each(TOKEN_KEYS)('finds ?%s=x, also without a value and after other parameters', (key) => {
    expect(queryHasToken(`/hooks/wake?${key}=x`)).toBe(true);
    expect(queryHasToken(`/hooks/wake?${key}`)).toBe(true);
    expect(queryHasToken(`/hooks/wake?a=1&b=&${key}=x&c`)).toBe(true);
  });

  it.each(OTHER_KEYS)('leaves ?%s=x alone', (key) => {
    expect(queryHasToken(`/hooks/wake?${key}=x`)).toBe(false);
  });

  it('looks at keys only, and needs a query string', () => {
    expect(queryHasToken('/hooks/wake')).toBe(false);
    expect(queryHasToken('/hooks/token')).toBe(false);
    expect(queryHasToken('/hooks/wake?')).toBe(false);
    expect(queryHasToken('/hooks/wake?x=token&y=token%3Dx&&')).toBe(false);
    expect(queryHasToken('/hooks/wake?%zz=1&%=2&%E2%84%AA=3')).toBe(false);
  });
});
