/**
 * The field-by-field validation matrix of the wake and agent requests (docs/endpoints.md): a missing required field, a wrong type, an empty string or a value
 * outside the allowed set is a 400 `invalid_payload` naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { BEARER, expectInvalidPayload, getRun, listEvents, postHook } from './support.js';

const CHANNELS = ['whatsapp', 'telegram', 'discord', 'slack', 'mattermost', 'signal', 'imessage', 'msteams'];
const LONG = 'x'.repeat(10_000);

describe('request validation', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Session keys allowed from requests here, so that only validation decides.
    gw = await startTestGateway(
      {
        hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
      },
      { inject: true },
    );
  });
  afterAll(() => gw.stop());

  describe('wake', () => {
    it.each<[string, string, Record<string, unknown>]>([
      ['text', 'missing', {}],
      ['text', 'missing (only mode given)', { mode: 'now' }],
      ['text', 'a number', { text: 42 }],
      ['text', 'a boolean', { text: true }],
      ['text', 'null', { text: null }],
      ['text', 'an object', { text: { value: 'x' } }],
      ['text', 'an array', { text: ['x'] }],
      ['text', 'an empty string', { text: '' }],
      ['text', 'whitespace only', { text: ' \n\t ' }],
      ['text', 'zero-width characters only', { text: '\u200b\u200c\u200d\u2060\ufeff' }],
      ['text', 'bidi controls and a variation selector only', { text: '\u202e\u2066\ufe0f\u00ad' }],
      ['text', 'blank look-alikes only (Hangul filler, Braille blank)', { text: '\u3164 \u2800' }],
      ['mode', 'outside the allowed set', { text: 'x', mode: 'later' }],
      ['mode', 'wrong case', { text: 'x', mode: 'NOW' }],
      ['mode', 'the agent-only spelling', { text: 'x', mode: 'next_heartbeat' }],
      ['mode', 'a number', { text: 'x', mode: 1 }],
      ['mode', 'a boolean', { text: 'x', mode: true }],
      ['mode', 'null', { text: 'x', mode: null }],
      ['mode', 'an empty string', { text: 'x', mode: '' }],
    ])('rejects %s when %s', async (field, _case, payload) => {
      const answer = await gw.hook('wake', payload);
      expectInvalidPayload(answer, field);
    });

    it.each(['now', 'next-heartbeat'])('accepts mode %j', async (mode) => {
      const answer = await gw.hook('wake', { text: `valid mode ${mode}`, mode });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.mode).toBe(mode);
    });

    it('stores nothing for an invalid wake', async () => {
      const answer = await gw.hook('wake', { text: 'never stored', mode: 'sometime' });
      expectInvalidPayload(answer, 'mode');
      const events = await listEvents(gw);
      expect(events.map((e) => e.text)).not.toContain('never stored');
    });
  });

  describe('agent', () => {
    it.each<[string, string, Record<string, unknown>]>([
      ['message', 'missing', {}],
      ['message', 'missing (other fields given)', { name: 'CI', deliver: false }],
      ['message', 'a number', { message: 1 }],
      ['message', 'null', { message: null }],
      ['message', 'an object', { message: { text: 'x' } }],
      ['message', 'an empty string', { message: '' }],
      ['message', 'whitespace only', { message: '   ' }],

      ['name', 'a number', { message: 'm', name: 7 }],
      ['name', 'null', { message: 'm', name: null }],
      ['name', 'an empty string', { message: 'm', name: '' }],
      ['name', 'absurdly long', { message: 'm', name: LONG }],

      ['agentId', 'a number', { message: 'm', agentId: 1 }],
      ['agentId', 'an array', { message: 'm', agentId: ['main'] }],
      ['agentId', 'an empty string', { message: 'm', agentId: '' }],
      ['agentId', 'absurdly long', { message: 'm', agentId: LONG }],

      ['sessionKey', 'a number', { message: 'm', sessionKey: 123 }],
      ['sessionKey', 'null', { message: 'm', sessionKey: null }],
      ['sessionKey', 'an empty string', { message: 'm', sessionKey: '' }],
      ['sessionKey', 'absurdly long', { message: 'm', sessionKey: `hook:${LONG}` }],

      ['wakeMode', 'outside the allowed set', { message: 'm', wakeMode: 'soon' }],
      ['wakeMode', 'wrong case', { message: 'm', wakeMode: 'Now' }],
      ['wakeMode', 'a boolean', { message: 'm', wakeMode: true }],
      ['wakeMode', 'an empty string', { message: 'm', wakeMode: '' }],

      ['deliver', 'the string "true"', { message: 'm', deliver: 'true' }],
      ['deliver', 'the string "false"', { message: 'm', deliver: 'false' }],
      ['deliver', 'the number 1', { message: 'm', deliver: 1 }],
      ['deliver', 'the number 0', { message: 'm', deliver: 0 }],
      ['deliver', 'null', { message: 'm', deliver: null }],
      ['deliver', 'an empty string', { message: 'm', deliver: '' }],

      ['channel', 'an unknown channel', { message: 'm', channel: 'sms' }],
      ['channel', 'a generic platform name (teams, not msteams)', { message: 'm', channel: 'teams' }],
      ['channel', 'wrong case', { message: 'm', channel: 'Telegram' }],
      ['channel', 'a number', { message: 'm', channel: 1 }],
      ['channel', 'null', { message: 'm', channel: null }],
      ['channel', 'an empty string', { message: 'm', channel: '' }],
      ['channel', 'unknown even with deliver false', { message: 'm', channel: 'pager', deliver: false }],

      ['to', 'a number', { message: 'm', to: 15550001111 }],
      ['to', 'an array', { message: 'm', to: ['a', 'b'] }],
      ['to', 'an empty string', { message: 'm', to: '' }],
      ['to', 'absurdly long', { message: 'm', to: LONG }],

      ['model', 'a number', { message: 'm', model: 4 }],
      ['model', 'an object', { message: 'm', model: { id: 'echo/x' } }],
      ['model', 'an empty string', { message: 'm', model: '' }],
      ['model', 'absurdly long', { message: 'm', model: `echo/${LONG}` }],

      ['thinking', 'outside the allowed set', { message: 'm', thinking: 'extreme' }],
      ['thinking', 'wrong case', { message: 'm', thinking: 'HIGH' }],
      ['thinking', 'a number', { message: 'm', thinking: 3 }],
      ['thinking', 'an empty string', { message: 'm', thinking: '' }],

      ['timeoutSeconds', 'a numeric string', { message: 'm', timeoutSeconds: '60' }],
      ['timeoutSeconds', 'zero', { message: 'm', timeoutSeconds: 0 }],
      ['timeoutSeconds', 'negative', { message: 'm', timeoutSeconds: -5 }],
      ['timeoutSeconds', 'a boolean', { message: 'm', timeoutSeconds: true }],
      ['timeoutSeconds', 'null', { message: 'm', timeoutSeconds: null }],
      ['timeoutSeconds', 'absurdly large', { message: 'm', timeoutSeconds: 1e12 }],
      ['timeoutSeconds', 'the smallest double (5e-324)', { message: 'm', timeoutSeconds: 5e-324 }],
      ['timeoutSeconds', 'under one second', { message: 'm', timeoutSeconds: 0.999 }],
      ['message', 'zero-width characters only', { message: '\u200b\u200b\u2060' }],
      ['name', 'zero-width characters only', { message: 'm', name: '\u200d' }],
    ])('rejects %s when %s', async (field, _case, payload) => {
      const answer = await gw.hook('agent', payload);
      expectInvalidPayload(answer, field);
    });

    it('rejects timeoutSeconds that overflows to Infinity (1e400)', async () => {
      const answer = await postHook(gw, 'agent', '{"message":"m","timeoutSeconds":1e400}', BEARER);
      expectInvalidPayload(answer, 'timeoutSeconds');
    });

    it.each<[string, Record<string, unknown>]>([
      ['wakeMode now', { wakeMode: 'now' }],
      ['wakeMode next-heartbeat', { wakeMode: 'next-heartbeat' }],
      ['deliver true', { deliver: true }],
      ['deliver false', { deliver: false }],
      ['channel last', { channel: 'last' }],
      ...CHANNELS.map((channel): [string, Record<string, unknown>] => [
        `channel ${channel} without delivery`,
        { channel, deliver: false },
      ]),
      ...['off', 'minimal', 'low', 'medium', 'high'].map((thinking): [string, Record<string, unknown>] => [
        `thinking ${thinking}`,
        { thinking },
      ]),
      ['an integer timeoutSeconds', { timeoutSeconds: 30 }],
      ['a fractional timeoutSeconds', { timeoutSeconds: 1.5 }],
      ['timeoutSeconds of exactly one second', { timeoutSeconds: 1 }],
      ['a message with a zero-width joiner inside an emoji', { message: '\u{1F469}\u200d\u{1F4BB}' }],
      ['a name', { name: 'GitHub' }],
      ['a recipient', { to: '+15550001111' }],
      ['an agentId', { agentId: 'main' }],
      ['an allowed sessionKey', { sessionKey: 'hook:validation' }],
      ['a model', { model: 'echo/other' }],
    ])('accepts %s', async (_label, fields) => {
      const answer = await gw.hook('agent', { message: 'valid', ...fields });
      expect(answer.status, answer.text).toBe(202);
      expect(answer.body).toEqual({ ok: true, runId: expect.any(String) });
    });

    it('accepts a message of a single non-space character and stores the run', async () => {
      const answer = await gw.hook('agent', { message: '?' });
      expect(answer.status).toBe(202);
      const run = await getRun(gw, answer.body.runId);
      expect(run.status).toBe('queued');
    });
  });
});
