/**
 * The built-in `gmail` preset (docs/mappings.md): `POST {hooks_path}/gmail`
 * with `{messages:[{id, threadId, from, subject, snippet, body, date}]}` — what
 * `agentgate hooks gmail run` forwards — becomes one agent run per message,
 * in the session `hook:gmail:<id>`, its text wrapped as untrusted email.
 */
import { z } from 'zod';
import { agentAction } from '../hook-model/actions.js';
import { validatePayload } from '../hook-model/payload.js';
import type { HookTarget } from '../hook-model/targets.js';
import { FOR_EACH_LIMIT } from './mapped-target.js';

/** Room for a batch of messages with bodies (each cut to `hooks.gmail.maxBytes` by the receiver). */
export const GMAIL_MAX_BODY_BYTES = 4 * 1024 * 1024;

const text = z.string({ error: 'must be a string' }).optional();
const gmailPayload = z.object({
  messages: z
    .array(
      z.object({
        id: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).min(1),
        threadId: text,
        from: text,
        subject: text,
        snippet: text,
        body: text,
        date: text,
      }),
      { error: 'must be an array of messages' },
    )
    .min(1, 'must hold at least one message')
    .max(FOR_EACH_LIMIT, `must hold at most ${FOR_EACH_LIMIT} messages`),
});

export function gmailPreset(): HookTarget {
  return {
    name: 'gmail',
    source: 'gmail',
    maxBodyBytes: GMAIL_MAX_BODY_BYTES,
    build(request, ctx) {
      const { messages } = validatePayload(gmailPayload, request.payload);
      return messages.map((mail) => {
        const lines = [
          'New email.',
          `From: ${mail.from ?? '(unknown)'}`,
          `Subject: ${mail.subject ?? '(none)'}`,
          ...(mail.date ? [`Date: ${mail.date}`] : []),
          '',
          mail.body?.trim() || mail.snippet || '(no text)',
        ];
        return agentAction(
          { message: lines.join('\n'), name: 'Gmail' },
          { ...ctx, source: 'gmail' },
          { sessionKey: `hook:gmail:${mail.id}` },
        );
      });
    },
  };
}
