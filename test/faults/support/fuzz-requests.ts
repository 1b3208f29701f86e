/**
 * fast-check arbitraries for hostile HTTP/1.1 requests against every endpoint:
 * odd methods, paths (%-garbage, very long, unicode), credentials (missing,
 * wrong, duplicated), content types, bodies (random bytes, deep or huge JSON,
 * unicode, oversized), framing (exact, short Content-Length, chunked) and
 * garbage pipelined after the request.
 */
import fc from 'fast-check';
import { ADMIN_TOKEN, HOOK_TOKEN } from '../../helpers/gateway.js';

export interface FuzzRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body: Buffer;
  framing: 'exact' | 'short' | 'chunked' | 'none';
  trailing: Buffer;
}

/** The gateway's endpoints, one mapped hook ("deploy") included. */
const ENDPOINTS = [
  '/hooks/wake',
  '/hooks/agent',
  '/hooks/deploy',
  '/api/runs/',
  '/api/sessions/',
  '/healthz',
];

/** Printable ASCII: what a header value may hold; control bytes get their own, rarer, cases. */
const printable = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
const headerValue = fc.oneof(
  { weight: 9, arbitrary: fc.string({ unit: printable, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) },
);

const pathChars = fc.constantFrom(...'abcXYZ019-._~%/?#&=;:@!$\'()*+,[]{}|\\^`"<>'.split(''));
const percentGarbage = fc.constantFrom(
  '%',
  '%z',
  '%zz',
  '%%',
  '%G0',
  '%00',
  '%ff%fe',
  '%2F',
  '%C0%AF',
  '%E2%80%AE',
);

const segment = fc.oneof(
  fc.string({ unit: pathChars, maxLength: 40 }),
  fc.array(percentGarbage, { maxLength: 6 }).map((parts) => parts.join('')),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
  fc.uuid(),
  fc.integer({ min: 100, max: 20_000 }).map((n) => 'a'.repeat(n)),
  // Raw bytes a URL may not hold: the parser must refuse them, not the app crash.
  fc.string({ unit: 'binary-ascii', maxLength: 8 }).filter((s) => /[^\x21-\x7e]/.test(s)),
);

const target = fc
  .oneof(
    {
      weight: 6,
      arbitrary: fc.tuple(fc.constantFrom(...ENDPOINTS), segment, fc.constantFrom('', '/events', '/x/y')),
    },
    { weight: 1, arbitrary: fc.tuple(fc.constant('/'), segment, fc.constant('')) },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom(...ENDPOINTS),
        fc.constantFrom(
          '?token=x',
          '?TOKEN=x',
          '?token[]=x',
          '?limit=-1',
          '?limit=1e400',
          '?after=%',
          '?a=1&a=2',
        ),
        fc.constant(''),
      ),
    },
  )
  .map(([base, middle, tail]) => {
    if (base.startsWith('/api/sessions/')) return `${base}${middle}${tail || '/events'}`;
    if (base.startsWith('/api/runs/')) return `${base}${middle}`;
    return `${base}${middle.startsWith('?') ? middle : middle ? `/${middle}` : ''}`;
  });

const method = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom('post', 'PROPFIND', 'CONNECT', 'TRACE', 'FOO', 'G E T', '') },
);

const credentials = fc.constantFrom<[string, string][]>(
  [],
  [['Authorization', `Bearer ${HOOK_TOKEN}`]],
  [['Authorization', `Bearer ${ADMIN_TOKEN}`]],
  [['x-agentgate-token', HOOK_TOKEN]],
  [['Authorization', 'Bearer wrong-token-0123456789abcdef01']],
  [['Authorization', `Basic ${HOOK_TOKEN}`]],
  [['Authorization', 'Bearer']],
  [
    ['Authorization', `Bearer ${HOOK_TOKEN}`],
    ['Authorization', `Bearer ${ADMIN_TOKEN}`],
  ],
  [
    ['Authorization', `Bearer ${HOOK_TOKEN}`],
    ['Authorization', `Bearer ${HOOK_TOKEN}`],
  ],
  [
    ['x-agentgate-token', HOOK_TOKEN],
    ['x-agentgate-token', 'other-token-0123456789abcdef0123'],
  ],
  [
    ['Authorization', `Bearer ${HOOK_TOKEN}`],
    ['x-agentgate-token', 'other-token-0123456789abcdef0123'],
  ],
);

const contentType = fc.option(
  fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'a/b c',
      '',
      ';;;',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json, text/plain',
    ),
    headerValue,
  ),
  { nil: undefined },
);

const headerName = fc.string({
  unit: fc.constantFrom(...'abcdefxyz-_0123'.split('')),
  minLength: 1,
  maxLength: 12,
});
const extraHeaders = fc.array(
  fc.oneof(
    fc.tuple(headerName, headerValue),
    fc.tuple(fc.constantFrom('Idempotency-Key', 'webhook-id'), fc.string({ maxLength: 300 })),
    fc.tuple(fc.constant('X-Forwarded-For'), fc.constantFrom('1.2.3.4', 'garbage', '::1, 10.0.0.1', '')),
    fc.tuple(fc.constantFrom('Accept-Encoding', 'Accept', 'Origin'), fc.constantFrom('gzip', '*/*', 'null')),
  ),
  { maxLength: 4 },
);

const deepJson = fc
  .tuple(fc.integer({ min: 1, max: 20_000 }), fc.boolean())
  .map(([depth, arrays]) =>
    arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
  );

const hostileText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom(
    '\u200b\u200c\u200d\ufeff',
    '\u0000',
    '\ud800',
    ' ',
    'END_EXTERNAL_CONTENT',
    'a'.repeat(70_000),
  ),
);

const hookJson = fc
  .record(
    {
      text: hostileText,
      message: hostileText,
      mode: fc.constantFrom('now', 'next-heartbeat', 'later', 1),
      name: hostileText,
      deliver: fc.constantFrom(false, true, 'yes', null),
      timeoutSeconds: fc.constantFrom(5e-324, 1, 1e308, -1, 0, Number.MAX_SAFE_INTEGER),
      sessionKey: fc.constantFrom('hook:x', 'agent:main:main', '', '../../etc'),
      agentId: fc.constantFrom('main', 'nobody', ''),
      channel: fc.constantFrom('telegram', 'last', 'nope'),
    },
    { requiredKeys: [] },
  )
  .map((value) => JSON.stringify(value));

const body = fc.oneof(
  { weight: 3, arbitrary: hookJson },
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: deepJson },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '1e999999',
      '123456789012345678901234567890123456789',
      '{"text":1e400}',
      '{"text":"a","text":"b"}',
      'null',
      '[]',
      '"just a string"',
      '{"timeoutSeconds":-0,"message":"x"}',
      '{"__proto__":{"polluted":true},"text":"x"}',
      '{"constructor":{"prototype":{"polluted":true}},"message":"x"}',
    ),
  },
  { weight: 1, arbitrary: fc.json({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(300 * 1024, 'a')) },
);

const trailing = fc.oneof(
  { weight: 6, arbitrary: fc.constant(Buffer.alloc(0)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from('\r\n\r\n'),
      Buffer.from('{}\r\n'),
      Buffer.from('\x00\x01\x02 garbage'),
      Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
    ),
  },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.from(bytes)) },
);

/** Anything at all, endpoint-shaped. */
const anyRequest: fc.Arbitrary<FuzzRequest> = fc
  .record({
    method,
    target,
    credentials,
    contentType,
    extraHeaders,
    body,
    framing: fc.constantFrom<FuzzRequest['framing']>(
      'exact',
      'exact',
      'exact',
      'exact',
      'short',
      'chunked',
      'none',
    ),
    trailing,
  })
  .map((r) => ({
    method: r.method,
    target: r.target,
    headers: [
      ...r.credentials,
      ...(r.contentType === undefined ? [] : ([['Content-Type', r.contentType]] as [string, string][])),
      ...r.extraHeaders,
    ],
    body: typeof r.body === 'string' ? Buffer.from(r.body) : r.body,
    framing: r.framing,
    trailing: r.trailing,
  }));

/** A well-framed POST to a hook, so the checks behind the parser (auth, content type, payload) are reached. */
const hookPost: fc.Arbitrary<FuzzRequest> = fc
  .record({
    target: fc.constantFrom('/hooks/wake', '/hooks/agent', '/hooks/deploy'),
    credentials,
    contentType,
    body: fc.oneof({ weight: 4, arbitrary: hookJson }, { weight: 1, arbitrary: body }),
    trailing,
  })
  .map((r) => ({
    method: 'POST',
    target: r.target,
    headers: [
      ...r.credentials,
      ...(r.contentType === undefined ? [] : ([['Content-Type', r.contentType]] as [string, string][])),
    ],
    body: typeof r.body === 'string' ? Buffer.from(r.body) : r.body,
    framing: 'exact' as const,
    // Garbage in the same write after a complete request: its answer must still come first.
    trailing: r.trailing,
  }));

export const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  { weight: 2, arbitrary: anyRequest },
  { weight: 1, arbitrary: hookPost },
);

/** The request's bytes on the wire; the connection is closed after it unless garbage follows. */
export function encode(request: FuzzRequest): Buffer {
  const lines = [`${request.method} ${request.target} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  if (request.trailing.length === 0) lines.push('Connection: close');
  let payload = request.body;
  if (request.framing === 'exact') lines.push(`Content-Length: ${payload.length}`);
  if (request.framing === 'short') lines.push(`Content-Length: ${Math.floor(payload.length / 2)}`);
  if (request.framing === 'chunked') {
    lines.push('Transfer-Encoding: chunked');
    payload = Buffer.concat([
      ...(payload.length > 0
        ? [Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n')]
        : []),
      Buffer.from('0\r\n\r\n'),
    ]);
  }
  // 'none': no framing header, so the body bytes are read as the next request.
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload, request.trailing]);
}

/** A short description of a request for failure reports (long parts cut). */
export function describe(request: FuzzRequest): string {
  const cut = (s: string) => (s.length > 80 ? `${s.slice(0, 80)}…(${s.length})` : s);
  return JSON.stringify({
    method: request.method,
    target: cut(request.target),
    headers: request.headers.map(
      ([n, v]) => `${n}: ${cut(v.replace(HOOK_TOKEN, '<hook>').replace(ADMIN_TOKEN, '<admin>'))}`,
    ),
    body: cut(request.body.toString('latin1')),
    framing: request.framing,
    trailing: cut(request.trailing.toString('latin1')),
  });
}
