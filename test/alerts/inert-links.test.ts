/**
 * What a sender may have chosen, quoted in an alert with its links inert (docs/alerts.md,
 * "Links"): no scheme a client could follow, no name a client could read as an address — in the
 * readable "defanged" form — and nothing else changed.
 */
import { describe, expect, it } from 'vitest';
import { inertLinks } from '../../src/alerts/inert-links.js';

describe('inertLinks', () => {
  it('breaks every scheme and every dot inside a name, whatever the address looks like', () => {
    expect(inertLinks('https://evil.example/x?a=1')).toBe('https[:]//evil[.]example/x?a=1');
    expect(inertLinks('go to www.evil.com or evil.zip now')).toBe('go to www[.]evil[.]com or evil[.]zip now');
    expect(inertLinks('ftp://10.0.0.1:21/')).toBe('ftp[:]//10[.]0[.]0[.]1:21/');
    expect(inertLinks('mail me: a@evil.example')).toBe('mail me: a@evil[.]example');
    // The stops clients read as dots in a domain name.
    expect(inertLinks('evil\u3002com evil\uFF0Ecom evil\uFF61com')).toBe('evil[.]com evil[.]com evil[.]com');
    expect(inertLinks('πλανήτης.ελ')).toBe('πλανήτης[.]ελ');
  });

  it('leaves text without addresses as it is', () => {
    for (const text of [
      'timed out after 600 s',
      'telegram: Bad Request: chat not found (error 400)',
      'HTTP 410. Giving up.',
      'hook:agent, CI',
      '**bold** <b>x</b> [a](b)',
      '',
    ]) {
      expect(inertLinks(text)).toBe(text);
    }
  });
});
