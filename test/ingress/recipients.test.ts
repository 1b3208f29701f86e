/** A `to` that cannot be valid for its channel is refused at the door, naming the field. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const CASES: [channel: string, bad: string, good: string][] = [
  ['whatsapp', 'not-a-number', '+15551234567'],
  ['telegram', 'chat-42', '-1001234567890'],
  ['telegram', '@1x', '@news_channel'],
  ['telegram', '-100123:topic:abc', '-1001234567890:topic:7'],
  ['discord', '#general', '123456789012345678'],
  // Short ids are plausible (docs/recipients.md): never refused for their length.
  ['discord', 'user:abc', '1234567'],
  ['discord', 'user:', 'user:80351110224678912'],
  ['slack', 'general channel', 'C0123456789'],
  ['slack', 'user:C0123', 'C012'],
  ['slack', 'C0123:thread:yesterday', 'C0123:thread:1700000000.000100'],
  ['slack', '#bad name', 'user:U0123'],
  ['mattermost', 'town-square', 'abcdefghijklmnopqrstuvwxyz'],
  ['mattermost', 'user:', 'user:abcdefghijklmnopqrstuvwxyz'],
  ['signal', '5551234567', '+15551234567'],
  ['signal', 'group:not base64!', 'group:Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo='],
  ['signal', 'uuid:nope', 'uuid:8d8a5c3e-1b0a-4c2b-9f3e-2a1b3c4d5e6f'],
  ['signal', 'username:alice', 'username:alice.01'],
  ['imessage', 'bob', 'bob@example.com'],
  ['imessage', 'chat:nope', 'chat:iMessage;+;chat123456789'],
  ['msteams', 'no-colon-here', '19:abc@thread.v2'],
  ['msteams', 'conversation:', 'conversation:a:1xyz'],
];

describe('recipient checks at the door', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(
      {
        channels: {
          whatsapp: { phoneNumberId: '1', accessToken: 'a' },
          telegram: { botToken: '1:t' },
          discord: { botToken: 'd' },
          slack: { botToken: 's' },
          mattermost: { baseUrl: 'http://127.0.0.1:1', token: 'm' },
          signal: { rpcUrl: 'http://127.0.0.1:1/api/v1/rpc', account: '+15550000000' },
          imessage: { serverUrl: 'http://127.0.0.1:1', password: 'p' },
          msteams: { appId: 'a', appPassword: 'p', serviceUrl: 'http://127.0.0.1:1' },
        },
      },
      { inject: true },
    );
  });
  afterAll(() => gw.stop());

  it.each(CASES)('%s refuses %j and accepts %j', async (channel, bad, good) => {
    const refused = await gw.hook('agent', { message: 'x', channel, to: bad });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ ok: false, code: 'invalid_payload', field: 'to' });
    expect(refused.body.error).toMatch(new RegExp(`^to: not a valid ${channel} recipient`));
    const accepted = await gw.hook('agent', { message: 'x', channel, to: good });
    expect(accepted.status).toBe(202);
  });

  it('checks the form before the channel is known to be configured, and not with deliver false or channel last', async () => {
    const other = await startTestGateway({}, { inject: true });
    try {
      expect(
        (await other.hook('agent', { message: 'x', channel: 'telegram', to: 'bad chat' })).body.code,
      ).toBe('invalid_payload');
      expect((await other.hook('agent', { message: 'x', channel: 'telegram', to: '42' })).body.code).toBe(
        'channel_not_configured',
      );
      expect(
        (await other.hook('agent', { message: 'x', channel: 'telegram', to: 'bad chat', deliver: false }))
          .status,
      ).toBe(202);
      expect((await other.hook('agent', { message: 'x', to: 'anything at all' })).status).toBe(202);
    } finally {
      await other.stop();
    }
  });
});
