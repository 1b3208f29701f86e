/**
 * The last route keeps the full recipient form (docs/recipients.md, "Recipient
 * forms of `to`") in both store drivers: a Telegram topic, a Slack thread, a DM
 * or a group comes back exactly as it was delivered to, so `channel: "last"`
 * and heartbeat replies reach the same place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS } from '../store/drivers.js';

const MAIN = 'agent:main:main';
const FORMS: [string, string][] = [
  ['telegram', '-1001234567890:topic:7'],
  ['telegram', '@forum_group:topic:12'],
  ['slack', 'C0123456789:thread:1700000000.000100'],
  ['slack', 'user:U0123ABC'],
  ['discord', 'user:80351110224678912'],
  ['mattermost', 'user:useruseruseruseruseruser01'],
  ['signal', 'group:Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo='],
  ['signal', 'username:alice.01'],
  ['imessage', 'chat:iMessage;+;chat123456789'],
  ['whatsapp', '+1 (555) 123-4567'],
  ['msteams', 'conversation:19:abc@thread.v2'],
];

describe.each(DRIVERS)('last route on $name', (driver) => {
  beforeAll(async () => {
    await driver.setup();
    await driver.reset();
  });
  afterAll(async () => {
    await driver.closeAll();
    await driver.teardown();
  });

  it('round-trips every recipient form unchanged', async () => {
    const store = driver.open();
    let now = Date.UTC(2026, 0, 1);
    for (const [channel, to] of FORMS) {
      await store.sessions.setRoute(MAIN, { channel, to }, now++);
      expect(await store.sessions.getRoute(MAIN)).toEqual({ channel, to });
    }
  });
});
