/** Every form of `to` in docs/recipients.md, parsed once into the typed recipient the adapter sends to. */
import { describe, expect, it } from 'vitest';
import { EXPECTED, parseRecipient, RecipientError, recipientProblem } from '../../src/channels/recipients.js';
import type { ChannelId } from '../../src/config/schema.js';

const UUID = '8d8a5c3e-1b0a-4c2b-9f3e-2a1b3c4d5e6f';
const GROUP = 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=';

const FORMS: [ChannelId, string, unknown][] = [
  ['telegram', '4242', { chatId: 4242 }],
  ['telegram', '-1001234567890', { chatId: -1001234567890 }],
  ['telegram', '@news_channel', { chatId: '@news_channel' }],
  ['telegram', '-1001234567890:topic:7', { chatId: -1001234567890, threadId: 7 }],
  ['telegram', '@forum_group:topic:12', { chatId: '@forum_group', threadId: 12 }],
  ['slack', 'C0123456789', { kind: 'channel', channel: 'C0123456789' }],
  ['slack', 'G01', { kind: 'channel', channel: 'G01' }],
  ['slack', 'channel:C0123', { kind: 'channel', channel: 'C0123' }],
  ['slack', '#builds', { kind: 'channel', channel: '#builds' }],
  ['slack', 'builds', { kind: 'channel', channel: '#builds' }],
  ['slack', 'user:U0123', { kind: 'user', user: 'U0123' }],
  ['slack', 'U0123', { kind: 'user', user: 'U0123' }],
  ['slack', 'W0123', { kind: 'user', user: 'W0123' }],
  [
    'slack',
    'C0123:thread:1700000000.000100',
    { kind: 'channel', channel: 'C0123', threadTs: '1700000000.000100' },
  ],
  [
    'slack',
    '#ops:thread:1700000000.000100',
    { kind: 'channel', channel: '#ops', threadTs: '1700000000.000100' },
  ],
  ['discord', '123456789012345678', { kind: 'channel', id: '123456789012345678' }],
  ['discord', '4242', { kind: 'channel', id: '4242' }],
  ['discord', 'channel:123456789012345678', { kind: 'channel', id: '123456789012345678' }],
  ['discord', 'user:80351110224678912', { kind: 'user', id: '80351110224678912' }],
  ['mattermost', 'abcdefghijklmnopqrstuvwxyz', { kind: 'channel', id: 'abcdefghijklmnopqrstuvwxyz' }],
  ['mattermost', 'channel:abc123', { kind: 'channel', id: 'abc123' }],
  ['mattermost', 'user:abcdefghijklmnopqrstuvwxyz', { kind: 'user', id: 'abcdefghijklmnopqrstuvwxyz' }],
  ['signal', '+15551234567', { kind: 'number', number: '+15551234567' }],
  ['signal', `uuid:${UUID.toUpperCase()}`, { kind: 'uuid', uuid: UUID }],
  ['signal', `group:${GROUP}`, { kind: 'group', groupId: GROUP }],
  ['signal', 'username:alice.01', { kind: 'username', username: 'alice.01' }],
  ['imessage', '+15551234567', { kind: 'address', address: '+15551234567' }],
  ['imessage', 'bob@example.com', { kind: 'address', address: 'bob@example.com' }],
  ['imessage', 'chat:iMessage;+;chat123456789', { kind: 'chat', chatGuid: 'iMessage;+;chat123456789' }],
  ['whatsapp', '+15551234567', { number: '15551234567' }],
  ['whatsapp', '15551234567', { number: '15551234567' }],
  ['whatsapp', '+1 (555) 123-4567', { number: '15551234567' }],
  ['msteams', '19:abc@thread.v2', { conversationId: '19:abc@thread.v2' }],
  ['msteams', 'a:1xyz', { conversationId: 'a:1xyz' }],
  ['msteams', 'conversation:19:abc@thread.v2', { conversationId: '19:abc@thread.v2' }],
];

const REFUSED: [ChannelId, string][] = [
  ['telegram', 'chat-42'],
  ['telegram', '0'],
  ['telegram', '42:topic:0'],
  ['telegram', '42:topic:x'],
  ['slack', 'general channel'],
  ['slack', 'user:C0123'],
  ['slack', 'C0123:thread:abc'],
  ['slack', 'U0123:thread:1.2'],
  ['discord', '#general'],
  ['discord', 'user:abc'],
  ['discord', '0'],
  ['discord', '123456789012345678901'],
  ['mattermost', 'town-square'],
  ['mattermost', 'user:'],
  ['signal', '5551234567'],
  ['signal', 'uuid:1234'],
  ['signal', 'group:not base64!'],
  ['signal', 'username:alice'],
  ['imessage', 'bob'],
  ['imessage', 'chat:nope'],
  ['whatsapp', 'not-a-number'],
  ['msteams', 'no-colon-here'],
];

describe('recipient forms', () => {
  it.each(FORMS)('%s %j', (channel, to, expected) => {
    expect(parseRecipient(channel, to)).toEqual(expected);
    expect(recipientProblem(channel, to)).toBeUndefined();
  });

  it.each(REFUSED)('%s refuses %j, naming the forms it takes', (channel, to) => {
    expect(() => parseRecipient(channel, to)).toThrow(RecipientError);
    expect(recipientProblem(channel, to)).toBe(
      `not a valid ${channel} recipient: expected ${EXPECTED[channel]}`,
    );
  });

  it('never refuses a plausible id for its length', () => {
    expect(parseRecipient('discord', '1')).toEqual({ kind: 'channel', id: '1' });
    expect(parseRecipient('slack', 'C1')).toEqual({ kind: 'channel', channel: 'C1' });
    expect(parseRecipient('mattermost', 'abc')).toEqual({ kind: 'channel', id: 'abc' });
    expect(parseRecipient('telegram', '@abc')).toEqual({ chatId: '@abc' });
    expect(parseRecipient('signal', '+4930')).toEqual({ kind: 'number', number: '+4930' });
    // Beyond a double's exact range: passed on as the string Telegram also accepts.
    expect(parseRecipient('telegram', '123456789012345678901')).toEqual({ chatId: '123456789012345678901' });
  });
});
