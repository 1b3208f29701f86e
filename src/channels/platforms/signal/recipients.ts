/** Signal's forms of `to` (docs/recipients.md): a number, an ACI uuid, a group or a username. */
import { E164, type RecipientRules } from '../../kit/recipients.js';

export type SignalRecipient =
  | { kind: 'number'; number: string }
  | { kind: 'uuid'; uuid: string }
  | { kind: 'group'; groupId: string }
  | { kind: 'username'; username: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const signalRecipients: RecipientRules<SignalRecipient> = {
  expected:
    'a phone number in E.164 form (+15551234567), uuid:<id>, group:<base64 id>, or username:<name.01>',
  parse(to) {
    if (E164.test(to)) return { kind: 'number', number: to };
    const match = /^(uuid|group|username):(.+)$/.exec(to);
    const value = match?.[2] as string;
    switch (match?.[1]) {
      case 'uuid':
        return UUID.test(value) ? { kind: 'uuid', uuid: value.toLowerCase() } : undefined;
      case 'group':
        // A group id is base64 (standard or URL-safe alphabet), as signal-cli prints it.
        return /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) ? { kind: 'group', groupId: value } : undefined;
      case 'username':
        // A Signal username is a nickname and a numeric discriminator: name.01
        return /^[A-Za-z_][A-Za-z0-9_]*\.\d{2,}$/.test(value)
          ? { kind: 'username', username: value }
          : undefined;
      default:
        return undefined;
    }
  },
};
