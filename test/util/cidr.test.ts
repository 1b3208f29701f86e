/**
 * The address lists of the config (src/util/cidr.ts; docs/configuration.md,
 * `hooks.allowedSources`): what `parseCidr` accepts and refuses, and what
 * `sourcesMatcher` lets through — IPv4, IPv6, IPv4-mapped IPv6 both in the list
 * and in the tested address, single addresses, host bits, odd input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCidr, plainAddress, sourcesMatcher } from '../../src/util/cidr.js';

describe('parseCidr', () => {
  it('reads CIDRs and single addresses of both families', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({
      ok: true,
      cidr: { family: 'ipv4', address: '10.0.0.0', prefix: 8 },
    });
    expect(parseCidr('203.0.113.7')).toEqual({
      ok: true,
      cidr: { family: 'ipv4', address: '203.0.113.7', prefix: 32 },
    });
    expect(parseCidr('2001:db8::/32')).toEqual({
      ok: true,
      cidr: { family: 'ipv6', address: '2001:db8::', prefix: 32 },
    });
    expect(parseCidr('::1')).toEqual({ ok: true, cidr: { family: 'ipv6', address: '::1', prefix: 128 } });
    expect(parseCidr('0.0.0.0/0')).toMatchObject({ ok: true, cidr: { prefix: 0 } });
    expect(parseCidr('::/0')).toMatchObject({ ok: true, cidr: { family: 'ipv6', prefix: 0 } });
  });

  it('takes IPv4-mapped IPv6 as IPv4', () => {
    expect(parseCidr('::ffff:192.0.2.1')).toEqual({
      ok: true,
      cidr: { family: 'ipv4', address: '192.0.2.1', prefix: 32 },
    });
    expect(parseCidr('::FFFF:10.0.0.0/104')).toEqual({
      ok: true,
      cidr: { family: 'ipv4', address: '10.0.0.0', prefix: 8 },
    });
  });

  it.each([
    ['', 'is not an IP address or CIDR'],
    ['localhost', 'is not an IP address or CIDR'],
    ['10.0.0/8', 'is not an IP address or CIDR'],
    ['256.0.0.1', 'is not an IP address or CIDR'],
    ['127.1', 'is not an IP address or CIDR'],
    [' 10.0.0.1', 'is not an IP address or CIDR'],
    ['10.0.0.0/33', 'the prefix length must be a number from 0 to 32 for IPv4'],
    ['10.0.0.0/', 'the prefix length must be a number from 0 to 32'],
    ['10.0.0.0/-1', 'the prefix length must be a number from 0 to 32'],
    ['10.0.0.0/8/8', 'the prefix length must be a number from 0 to 32'],
    ['10.0.0.0/ 8', 'the prefix length must be a number from 0 to 32'],
    ['10.0.0.0/255.0.0.0', 'write the mask as a prefix length'],
    ['2001:db8::/129', 'the prefix length must be a number from 0 to 128 for IPv6'],
    ['2001:db8:::/32', 'is not an IP address or CIDR'],
    ['fe80::1%eth0', 'a zone index'],
  ])('refuses %j', (text, problem) => {
    const parsed = parseCidr(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.problem).toContain(problem);
      expect(parsed.problem.startsWith(JSON.stringify(text))).toBe(true);
    }
  });
});

describe('sourcesMatcher', () => {
  it('matches IPv4 addresses inside a CIDR or equal to a listed address', () => {
    const allowed = sourcesMatcher(['10.0.0.0/8', '203.0.113.7']);
    expect(allowed('10.1.2.3')).toBe(true);
    expect(allowed('10.255.255.255')).toBe(true);
    expect(allowed('11.0.0.0')).toBe(false);
    expect(allowed('203.0.113.7')).toBe(true);
    expect(allowed('203.0.113.8')).toBe(false);
  });

  it('matches IPv6 by prefix, in any text form', () => {
    const allowed = sourcesMatcher(['2001:db8:1::/48', '::1']);
    expect(allowed('2001:db8:1:ffff::5')).toBe(true);
    expect(allowed('2001:DB8:1:0:0:0:0:1')).toBe(true);
    expect(allowed('2001:db8:2::1')).toBe(false);
    expect(allowed('::1')).toBe(true);
    expect(allowed('0:0:0:0:0:0:0:1')).toBe(true);
    expect(allowed('[::1]')).toBe(true);
    expect(allowed('fe80::1')).toBe(false);
  });

  it('takes an IPv4-mapped peer as its IPv4 address, and a mapped entry as IPv4', () => {
    expect(sourcesMatcher(['192.168.0.0/16'])('::ffff:192.168.4.5')).toBe(true);
    expect(sourcesMatcher(['192.168.0.0/16'])('::ffff:192.169.4.5')).toBe(false);
    expect(sourcesMatcher(['::ffff:192.168.0.0/112'])('192.168.4.5')).toBe(true);
    expect(sourcesMatcher(['::ffff:192.168.4.5'])('192.168.4.5')).toBe(true);
    expect(sourcesMatcher(['::ffff:192.168.4.5'])('192.168.4.6')).toBe(false);
  });

  it('does not let IPv4 through an IPv6 rule or the other way round', () => {
    expect(sourcesMatcher(['::/0'])('10.0.0.1')).toBe(false);
    expect(sourcesMatcher(['0.0.0.0/0'])('2001:db8::1')).toBe(false);
    expect(sourcesMatcher(['0.0.0.0/0'])('10.0.0.1')).toBe(true);
  });

  it('ignores host bits after the prefix, and a zone on the tested address', () => {
    expect(sourcesMatcher(['127.0.0.1/8'])('127.9.9.9')).toBe(true);
    expect(sourcesMatcher(['fe80::/10'])('fe80::1%eth0')).toBe(true);
  });

  it('refuses what is not an address, and everything for an empty list', () => {
    const allowed = sourcesMatcher(['10.0.0.0/8']);
    for (const odd of ['', 'unknown', '10.0.0', '10.0.0.1, 10.0.0.2', '::ffff:10.0.0.1.1']) {
      expect(allowed(odd), odd).toBe(false);
    }
    expect(sourcesMatcher([])('10.0.0.1')).toBe(false);
  });

  it('throws on an entry the config check refuses', () => {
    expect(() => sourcesMatcher(['10.0.0.0/8', 'nope'])).toThrow(TypeError);
  });

  it('agrees with a plain prefix comparison for random IPv4 addresses and CIDRs', () => {
    const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255));
    const asNumber = (octets: number[]) => octets.reduce((n, o) => n * 256 + o, 0);
    fc.assert(
      fc.property(ipv4, fc.integer({ min: 0, max: 32 }), ipv4, (net, prefix, peer) => {
        const block = 2 ** (32 - prefix);
        const inside = Math.floor(asNumber(net) / block) === Math.floor(asNumber(peer) / block);
        const allowed = sourcesMatcher([`${net.join('.')}/${prefix}`]);
        expect(allowed(peer.join('.'))).toBe(inside);
        expect(allowed(`::ffff:${peer.join('.')}`)).toBe(inside);
      }),
      { numRuns: 300 },
    );
  });
});

describe('plainAddress', () => {
  it('strips brackets, a zone, and the IPv4-mapped prefix', () => {
    expect(plainAddress('[2001:db8::1]')).toBe('2001:db8::1');
    expect(plainAddress('fe80::1%en0')).toBe('fe80::1');
    expect(plainAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(plainAddress('127.0.0.1')).toBe('127.0.0.1');
    expect(plainAddress('not an address')).toBe('not an address');
  });
});
