/**
 * Where the receiver hands a new mail (docs/gmail.md): the gateway's `POST {hooks.path}/gmail` with the
 * hook token and `Idempotency-Key: gmail:<messageId>`. Inside `agentgate run`
 * that request goes to the gateway's own Fastify app in process (`inject`): no
 * socket, no loopback port, yet the very same route — token, idempotency,
 * payload validation, policy, the gmail preset and the durable commit.
 * `agentgate hooks gmail run` alone sends it over HTTP to
 * `hooks.gmail.hookUrl`.
 *
 * A sink resolves once the gateway accepted the mail, and throws otherwise, so
 * the push is answered 5xx and Pub/Sub delivers it again.
 */
import type { FastifyInstance } from 'fastify';
import type { ExtractedMail } from './google/mime.js';

/** What is forwarded per message: the extracted mail without its labels. */
export type ForwardedMail = Omit<ExtractedMail, 'labelIds'>;

export type MailSink = (mail: ForwardedMail) => Promise<void>;

const FORWARD_TIMEOUT_MS = 30_000;

function hookRequest(mail: ForwardedMail, hookToken: string) {
  return {
    headers: {
      authorization: `Bearer ${hookToken}`,
      'content-type': 'application/json',
      'idempotency-key': `gmail:${mail.id}`,
    },
    body: JSON.stringify({ messages: [mail] }),
  };
}

/** 2xx is accepted; so is 409: this key was accepted before with another body (e.g. a longer cut). */
function requireAccepted(status: number, mail: ForwardedMail): void {
  if ((status < 200 || status > 299) && status !== 409) {
    throw new Error(`the gateway answered ${status} for gmail message ${mail.id}`);
  }
}

/** `agentgate hooks gmail run` alone: POST to `hookUrl` over HTTP. */
export function forwardOverHttp(
  hookUrl: string,
  hookToken: string,
  fetchImpl: typeof fetch = fetch,
): MailSink {
  return async (mail) => {
    const { headers, body } = hookRequest(mail, hookToken);
    const response = await fetchImpl(hookUrl, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    });
    await response.arrayBuffer();
    requireAccepted(response.status, mail);
  };
}

/** Inside `agentgate run`: the same request, injected into the gateway's own app. */
export function handToIngress(app: FastifyInstance, hookPath: string, hookToken: string): MailSink {
  return async (mail) => {
    const { headers, body } = hookRequest(mail, hookToken);
    const response = await app.inject({ method: 'POST', url: hookPath, headers, payload: body });
    requireAccepted(response.statusCode, mail);
  };
}
