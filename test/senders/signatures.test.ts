/**
 * Provider signature verification (`verify`; docs/mappings.md, "Signatures"). Valid
 * signatures are computed here with node:crypto straight from each provider's
 * documented recipe, independently of the module under test, and each scheme is
 * also checked against the provider's own published example where one exists.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  SIGNATURE_TOLERANCE_SECONDS,
  type VerifyKind,
  type VerifyResult,
  type VerifySettings,
  verifySignature,
} from '../../src/senders/index.js';

/** One check's inputs: the mapping's `verify` (kind and secret) and the request. */
interface VerifyInput {
  kind: VerifyKind;
  secret: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  now: number;
}

function jsonOrUndefined(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function check({ kind, secret, headers, body, now }: VerifyInput): VerifyResult {
  return verifySignature({ kind, secret } as VerifySettings, {
    headers,
    body,
    payload: jsonOrUndefined(body),
    now,
  });
}

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = Math.floor(NOW / 1000);
const BODY = Buffer.from('{"action":"opened","number":42,"title":"héllo"}');

const hmacHex = (key: string | Buffer, data: string | Buffer) =>
  createHmac('sha256', key).update(data).digest('hex');
const hmacB64 = (key: string | Buffer, data: string | Buffer) =>
  createHmac('sha256', key).update(data).digest('base64');

function input(
  kind: VerifyKind,
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer = BODY,
  now = NOW,
): VerifyInput {
  return { kind, secret, headers, body, now };
}

function accepted(args: VerifyInput): void {
  expect(check(args)).toEqual({ ok: true });
}

/**
 * Refused with a reason matching `pattern`; the reason never leaks the secret
 * nor any of the `hidden` values (the expected signatures).
 */
function refused(args: VerifyInput, pattern: RegExp, hidden: string[] = []): string {
  const result = check(args);
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  expect(result.reason).toMatch(pattern);
  if (args.secret !== '') expect(result.reason).not.toContain(args.secret);
  for (const value of hidden) expect(result.reason).not.toContain(value);
  return result.reason;
}

const MISMATCH = /^signature does not match$/;
const TOO_OLD = new RegExp(
  `^timestamp is outside the ${SIGNATURE_TOLERANCE_SECONDS} s tolerance \\(too old\\)$`,
);
const IN_FUTURE = new RegExp(
  `^timestamp is outside the ${SIGNATURE_TOLERANCE_SECONDS} s tolerance \\(in the future\\)$`,
);

describe('github (X-Hub-Signature-256)', () => {
  const SECRET = 'gh-webhook-secret-9f3a';
  const sign = (body: Buffer, secret = SECRET) => `sha256=${hmacHex(secret, body)}`;
  const gh = (headers: IncomingHttpHeaders, body = BODY, secret = SECRET) =>
    input('github', secret, headers, body);

  it("accepts GitHub's documented test vector", () => {
    // docs.github.com "Validating webhook deliveries" → "Testing the webhook payload validation".
    accepted(
      input(
        'github',
        "It's a Secret to Everybody",
        { 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' },
        Buffer.from('Hello, World!'),
      ),
    );
  });

  it('accepts a signature computed over the raw body, whatever the header-name casing', () => {
    accepted(gh({ 'x-hub-signature-256': sign(BODY) }));
    accepted(gh({ 'X-Hub-Signature-256': sign(BODY) }));
    accepted(gh({ 'x-hub-signature-256': sign(BODY).toUpperCase().replace('SHA256=', 'sha256=') }));
  });

  it('signs the bytes as received, not a decoded string', () => {
    const binary = Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0x7d]); // not valid UTF-8
    accepted(gh({ 'x-hub-signature-256': sign(binary) }, binary));
  });

  it('has no timestamp, so the clock does not matter', () => {
    accepted({ ...gh({ 'x-hub-signature-256': sign(BODY) }), now: 0 });
  });

  it('refuses a tampered body', () => {
    const tampered = Buffer.from(BODY.toString().replace('42', '43'));
    refused(gh({ 'x-hub-signature-256': sign(BODY) }, tampered), MISMATCH, [sign(tampered)]);
  });

  it('refuses a signature made with another secret', () => {
    refused(gh({ 'x-hub-signature-256': sign(BODY, 'not-the-secret') }), MISMATCH, [sign(BODY)]);
  });

  it('refuses a truncated signature as a plain mismatch', () => {
    refused(gh({ 'x-hub-signature-256': sign(BODY).slice(0, 40) }), MISMATCH, [sign(BODY)]);
  });

  it('refuses a missing header', () => {
    refused(gh({}), /^missing X-Hub-Signature-256 header$/);
    refused(gh({ 'x-hub-signature-256': '' }), /^missing X-Hub-Signature-256 header$/);
    // The legacy SHA-1 header alone is not enough.
    refused(
      gh({ 'x-hub-signature': `sha1=${createHmac('sha1', SECRET).update(BODY).digest('hex')}` }),
      /^missing X-Hub-Signature-256 header$/,
    );
  });

  it('refuses a malformed header', () => {
    const hex = hmacHex(SECRET, BODY);
    for (const value of [hex, `sha1=${hex}`, 'sha256=', 'sha256=not-hex', `sha256=${hex} extra`]) {
      refused(gh({ 'x-hub-signature-256': value }), /^malformed X-Hub-Signature-256 header/, [hex]);
    }
    refused(gh({ 'x-hub-signature-256': [sign(BODY), sign(BODY)] }), /sent more than once/);
  });
});

describe('stripe (Stripe-Signature)', () => {
  // Stripe endpoint secrets look like this and are used as-is as the HMAC key.
  const SECRET = 'whsec_test_5f2b8c1e9d7a4b3c2e1f0a9b8c7d6e5f';
  const sign = (t: number | string, body = BODY, secret = SECRET) => hmacHex(secret, `${t}.${body}`);
  const st = (header: string | undefined, body = BODY, now = NOW, secret = SECRET) =>
    input('stripe', secret, header === undefined ? {} : { 'stripe-signature': header }, body, now);

  it('accepts a signature computed as Stripe documents (t.payload, secret used as-is)', () => {
    accepted(st(`t=${NOW_S},v1=${sign(NOW_S)}`));
    // Header-name casing does not matter.
    accepted(input('stripe', SECRET, { 'Stripe-Signature': `t=${NOW_S},v1=${sign(NOW_S)}` }));
  });

  it('keys the HMAC with the whole whsec_ string, not its decoded tail', () => {
    const stripped = SECRET.slice('whsec_'.length);
    refused(st(`t=${NOW_S},v1=${sign(NOW_S, BODY, stripped)}`), MISMATCH, [sign(NOW_S)]);
  });

  it('accepts when any of several v1 signatures matches, and ignores v0', () => {
    const other = sign(NOW_S, BODY, 'whsec_old_rotated_secret');
    accepted(st(`t=${NOW_S},v1=${other},v1=${sign(NOW_S)},v0=${'0'.repeat(64)}`));
    accepted(st(`t=${NOW_S},v1=${sign(NOW_S)},v1=${other}`));
    refused(st(`t=${NOW_S},v1=${other},v1=${'a'.repeat(64)}`), MISMATCH, [sign(NOW_S)]);
  });

  it('refuses a tampered body', () => {
    refused(st(`t=${NOW_S},v1=${sign(NOW_S)}`, Buffer.from(`${BODY} `)), MISMATCH, [
      sign(NOW_S, Buffer.from(`${BODY} `)),
    ]);
  });

  it('refuses a signature made with another secret', () => {
    refused(st(`t=${NOW_S},v1=${sign(NOW_S, BODY, 'whsec_wrong')}`), MISMATCH, [sign(NOW_S)]);
  });

  it('binds the timestamp: a fresh t with an old signature does not match', () => {
    refused(st(`t=${NOW_S},v1=${sign(NOW_S - 1000)}`), MISMATCH, [sign(NOW_S)]);
  });

  it('refuses a stale timestamp, accepting the edge of the window', () => {
    const edge = NOW_S - SIGNATURE_TOLERANCE_SECONDS;
    accepted(st(`t=${edge},v1=${sign(edge)}`));
    const stale = edge - 1;
    refused(st(`t=${stale},v1=${sign(stale)}`), TOO_OLD, [sign(stale)]);
  });

  it('refuses a timestamp too far in the future', () => {
    const edge = NOW_S + SIGNATURE_TOLERANCE_SECONDS;
    accepted(st(`t=${edge},v1=${sign(edge)}`));
    refused(st(`t=${edge + 1},v1=${sign(edge + 1)}`), IN_FUTURE);
  });

  it('refuses a missing header', () => {
    refused(st(undefined), /^missing Stripe-Signature header$/);
  });

  it('refuses a malformed header', () => {
    const v1 = sign(NOW_S);
    for (const header of [
      'garbage',
      `v1=${v1}`, // no t
      `t=abc,v1=${v1}`,
      `t=${NOW_S}.5,v1=${v1}`,
      `t=${NOW_S},t=${NOW_S},v1=${v1}`,
      `t=${NOW_S},,v1=${v1}`,
    ]) {
      refused(st(header), /^malformed Stripe-Signature header/, [v1]);
    }
  });

  it('refuses a header without any v1 signature', () => {
    refused(st(`t=${NOW_S},v0=${sign(NOW_S)}`), /^Stripe-Signature header has no v1 signature$/);
  });
});

describe('slack (X-Slack-Signature, v0)', () => {
  const SECRET = 'slack-signing-secret-4c7d1e2f';
  const sign = (ts: number | string, body = BODY, secret = SECRET) =>
    `v0=${hmacHex(secret, `v0:${ts}:${body}`)}`;
  const sl = (headers: IncomingHttpHeaders, body = BODY, now = NOW, secret = SECRET) =>
    input('slack', secret, headers, body, now);
  const headers = (ts: number | string, sig: string): IncomingHttpHeaders => ({
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': sig,
  });

  // api.slack.com "Verifying requests from Slack", the step-by-step walk-through.
  const DOC = {
    secret: '8f742231b10e8888abcd99yyyzzz85a5',
    ts: 1531420618,
    body: Buffer.from(
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    ),
    signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
  };

  it("accepts Slack's documented example at its own time, and refuses it today as a replay", () => {
    const docHeaders = headers(DOC.ts, DOC.signature);
    accepted(sl(docHeaders, DOC.body, DOC.ts * 1000 + 60_000, DOC.secret));
    refused(sl(docHeaders, DOC.body, NOW, DOC.secret), TOO_OLD);
  });

  it('accepts a signature computed as Slack documents', () => {
    accepted(sl(headers(NOW_S, sign(NOW_S))));
    accepted(sl({ 'X-Slack-Request-Timestamp': String(NOW_S), 'X-Slack-Signature': sign(NOW_S) }));
  });

  it('refuses a tampered body', () => {
    refused(sl(headers(NOW_S, sign(NOW_S)), Buffer.from('{}')), MISMATCH, [sign(NOW_S, Buffer.from('{}'))]);
  });

  it('refuses a signature made with another secret', () => {
    refused(sl(headers(NOW_S, sign(NOW_S, BODY, 'wrong'))), MISMATCH, [sign(NOW_S)]);
  });

  it('binds the timestamp: replaying with a fresh timestamp header does not match', () => {
    refused(sl(headers(NOW_S, sign(NOW_S - 600))), MISMATCH, [sign(NOW_S)]);
  });

  it('refuses a stale timestamp (more than 5 minutes old)', () => {
    const edge = NOW_S - SIGNATURE_TOLERANCE_SECONDS;
    accepted(sl(headers(edge, sign(edge))));
    refused(sl(headers(edge - 1, sign(edge - 1))), TOO_OLD);
  });

  it('refuses a timestamp more than 5 minutes in the future', () => {
    const edge = NOW_S + SIGNATURE_TOLERANCE_SECONDS;
    accepted(sl(headers(edge, sign(edge))));
    refused(sl(headers(edge + 1, sign(edge + 1))), IN_FUTURE);
  });

  it('refuses missing headers, naming the one missing', () => {
    refused(sl({ 'x-slack-signature': sign(NOW_S) }), /^missing X-Slack-Request-Timestamp header$/);
    refused(sl({ 'x-slack-request-timestamp': String(NOW_S) }), /^missing X-Slack-Signature header$/);
  });

  it('refuses malformed headers', () => {
    const good = sign(NOW_S);
    for (const ts of ['abc', `${NOW_S}.5`, `-${NOW_S}`]) {
      refused(sl(headers(ts, good)), /^malformed X-Slack-Request-Timestamp header/, [good]);
    }
    for (const sig of [good.slice(3), `v1=${good.slice(3)}`, 'v0=', 'v0=xyz']) {
      refused(sl(headers(NOW_S, sig)), /^malformed X-Slack-Signature header/, [good]);
    }
  });
});

describe('standard-webhooks (webhook-id / webhook-timestamp / webhook-signature)', () => {
  const KEY = randomBytes(24); // the spec asks for 24–64 random bytes
  const SECRET = `whsec_${KEY.toString('base64')}`;
  const ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const sign = (ts: number | string, body = BODY, key: Buffer | string = KEY, id = ID) =>
    `v1,${hmacB64(key, `${id}.${ts}.${body}`)}`;
  const sw = (headers: IncomingHttpHeaders, body = BODY, now = NOW, secret = SECRET) =>
    input('standard-webhooks', secret, headers, body, now);
  const headers = (ts: number | string, sig: string, id = ID): IncomingHttpHeaders => ({
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': sig,
  });

  // The reference libraries' known answer ("sign function works" in
  // standard-webhooks/libraries/javascript/src/webhook.test.ts).
  const VECTOR = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    ts: 1614265330,
    body: Buffer.from('{"test": 2432232314}'),
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };

  it('accepts the reference test vector, with or without the whsec_ prefix', () => {
    const h = headers(VECTOR.ts, VECTOR.signature, VECTOR.id);
    accepted(sw(h, VECTOR.body, VECTOR.ts * 1000, VECTOR.secret));
    accepted(sw(h, VECTOR.body, VECTOR.ts * 1000, VECTOR.secret.slice('whsec_'.length)));
  });

  it('accepts a signature computed as the spec documents (base64-decoded key)', () => {
    accepted(sw(headers(NOW_S, sign(NOW_S))));
    accepted(sw({ 'Webhook-Id': ID, 'Webhook-Timestamp': String(NOW_S), 'Webhook-Signature': sign(NOW_S) }));
  });

  it('keys the HMAC with the decoded bytes, not the secret text', () => {
    refused(sw(headers(NOW_S, sign(NOW_S, BODY, SECRET))), MISMATCH, [sign(NOW_S)]);
  });

  it('accepts a list where one v1 entry is valid, ignoring other versions', () => {
    const valid = sign(NOW_S);
    const list = [
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      `v2,${valid.slice(3)}`,
      valid,
      'v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==',
    ];
    accepted(sw(headers(NOW_S, list.join(' '))));
    // The right bytes under another version label do not count.
    refused(sw(headers(NOW_S, `v2,${valid.slice(3)}`)), /^malformed webhook-signature header/, [valid]);
    refused(sw(headers(NOW_S, 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1,AAAA')), MISMATCH, [valid]);
  });

  it('refuses a tampered body', () => {
    refused(sw(headers(NOW_S, sign(NOW_S)), Buffer.from(`${BODY}\n`)), MISMATCH, [sign(NOW_S)]);
  });

  it('refuses a signature made with another secret', () => {
    refused(sw(headers(NOW_S, sign(NOW_S, BODY, randomBytes(24)))), MISMATCH, [sign(NOW_S)]);
  });

  it('binds the id and the timestamp', () => {
    refused(sw(headers(NOW_S, sign(NOW_S), 'msg_other')), MISMATCH);
    refused(sw(headers(NOW_S, sign(NOW_S - 100))), MISMATCH);
  });

  it('refuses a stale timestamp', () => {
    const edge = NOW_S - SIGNATURE_TOLERANCE_SECONDS;
    accepted(sw(headers(edge, sign(edge))));
    refused(sw(headers(edge - 1, sign(edge - 1))), TOO_OLD);
  });

  it('refuses a timestamp too far in the future', () => {
    const edge = NOW_S + SIGNATURE_TOLERANCE_SECONDS;
    accepted(sw(headers(edge, sign(edge))));
    refused(sw(headers(edge + 1, sign(edge + 1))), IN_FUTURE);
  });

  it('refuses each missing header by name', () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const h = headers(NOW_S, sign(NOW_S));
      delete h[name];
      refused(sw(h), new RegExp(`^missing ${name} header$`));
    }
  });

  it('refuses malformed headers', () => {
    const good = sign(NOW_S);
    refused(sw(headers('hello', good)), /^malformed webhook-timestamp header/, [good]);
    refused(sw(headers(`${NOW_S}.0`, good)), /^malformed webhook-timestamp header/, [good]);
    for (const sig of ['garbage', good.slice(3), `v1;${good.slice(3)}`]) {
      refused(sw(headers(NOW_S, sig)), /^malformed webhook-signature header/, [good]);
    }
    // Well-formed but partial signatures are plain mismatches.
    refused(sw(headers(NOW_S, 'v1,')), MISMATCH, [good]);
    refused(sw(headers(NOW_S, good.slice(0, 10))), MISMATCH, [good]);
  });

  it('refuses a secret that is not whsec_<base64>, without echoing it', () => {
    for (const secret of ['whsec_not base64!', 'whsec_==', 'hunter2-plain-text', 'whsec_A']) {
      refused(
        sw(headers(NOW_S, sign(NOW_S)), BODY, NOW, secret),
        /^the standard-webhooks secret is not valid/,
      );
    }
  });
});

describe('any scheme', () => {
  it('refuses an empty secret', () => {
    for (const kind of ['github', 'stripe', 'slack', 'standard-webhooks'] as const) {
      refused(input(kind, '', {}), /^no signature secret is configured/);
    }
  });

  it('refuses an unknown kind', () => {
    refused(input('bitbucket' as VerifyKind, 'secret-x', {}), /^unsupported signature kind "bitbucket"$/);
  });

  it('never puts the secret in a reason, even when the secret is echoed in a header', () => {
    const secret = 'sup3r-s3cret-value';
    for (const kind of ['github', 'stripe', 'slack', 'standard-webhooks'] as const) {
      const headers: IncomingHttpHeaders = {
        'x-hub-signature-256': secret,
        'stripe-signature': secret,
        'x-slack-request-timestamp': String(NOW_S),
        'x-slack-signature': secret,
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(NOW_S),
        'webhook-signature': `v1,${secret}`,
      };
      refused(input(kind, secret, headers), /./);
    }
  });
});
