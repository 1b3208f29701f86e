/**
 * Reads a request body with a byte limit and a deadline.
 *
 * Over the limit (by Content-Length, or while a chunked/unannounced body is
 * still arriving) it fails at once with 413 and keeps draining what the client
 * still sends. Both 413 and 408 carry `Connection: close`: the error handler
 * sends them as the connection's last answer with a lingering close, so the
 * client gets the answer rather than a TCP reset (http/closing-answer.ts).
 */
import type { Readable } from 'node:stream';
import { HttpError } from '../http/errors.js';

export const BODY_TIMEOUT_MS = 30_000;

export function payloadTooLarge(limit: number): HttpError {
  return new HttpError('payload_too_large', `request body exceeds the limit of ${limit} bytes`, {
    connection: 'close',
  });
}

export function bodyTimedOut(timeoutMs: number): HttpError {
  return new HttpError('request_timeout', `request body not received within ${timeoutMs / 1000} s`, {
    connection: 'close',
  });
}

function bodyAborted(): HttpError {
  return new HttpError('bad_request', 'the connection closed before the request body was complete');
}

export function readBody(
  stream: Readable,
  contentLength: string | undefined,
  limit: number,
  timeoutMs: number,
  done: (error: HttpError | Error | null, body?: Buffer) => void,
): void {
  if (contentLength !== undefined && Number(contentLength) > limit) {
    stream.resume(); // discard whatever arrives; the answer goes out now
    done(payloadTooLarge(limit));
    return;
  }

  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const finish = (error: HttpError | Error | null, body?: Buffer) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    stream.removeListener('data', onData);
    stream.removeListener('end', onEnd);
    stream.removeListener('error', onError);
    if (error) stream.on('error', ignore).resume();
    done(error, body);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) finish(payloadTooLarge(limit));
    else chunks.push(chunk);
  };
  const onEnd = () => finish(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
  // A client that closes mid-body is not a server failure: answer (to nobody) as a client error.
  const onError = (error: NodeJS.ErrnoException) =>
    finish(error.code === 'ECONNRESET' ? bodyAborted() : error);
  const timer = setTimeout(() => finish(bodyTimedOut(timeoutMs)), timeoutMs);

  stream.on('data', onData);
  stream.on('end', onEnd);
  stream.on('error', onError);
}

const ignore = () => {};
