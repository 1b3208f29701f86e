/** WhatsApp's form of `to` (docs/recipients.md): a phone number, as people write it. */
import type { RecipientRules } from '../../kit/recipients.js';

export type WhatsAppRecipient = { number: string };

export const whatsappRecipients: RecipientRules<WhatsAppRecipient> = {
  expected: 'a phone number in E.164 form, with or without +, e.g. +15551234567',
  parse(to) {
    // Spaces, dashes, dots and parentheses as people write numbers are dropped.
    const digits = to.replace(/[\s().-]/g, '').replace(/^\+/, '');
    return /^[1-9]\d{1,14}$/.test(digits) ? { number: digits } : undefined;
  },
};
