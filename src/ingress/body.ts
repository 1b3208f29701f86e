/**
 * Reads a request body with a byte limit and a deadline.
 *
 * Over the limit (by Content-Length, or while a chunked/unannounced body is
 * still arriving) it fails at once with 413 and keeps draining what the client
 * still sends, so the connection can be closed without a TCP reset that would
 * make the client lose the 413 answer (see `lingeringClose`).
 */
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { HttpError } from '../http/errors.js';

export const BODY_TIMEOUT_MS = 30_000;

export function payloadTooLarge(limit: number): HttpError {
  return new HttpError(413, 'payload_too_large', `request body exceeds the limit of ${limit} bytes`, {
    connection: 'close',
  });
}

export function bodyTimedOut(timeoutMs: number): HttpError {
  return new HttpError(408, 'request_timeout', `request body not received within ${timeoutMs / 1000} s`, {
    connection: 'close',
  });
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
  const onError = (error: Error) => finish(error);
  const timer = setTimeout(() => finish(bodyTimedOut(timeoutMs)), timeoutMs);

  stream.on('data', onData);
  stream.on('end', onEnd);
  stream.on('error', onError);
}

const ignore = () => {};

/** How long a connection that got an early error answer keeps draining input before it is cut. */
export const LINGER_MS = 5_000;

/**
 * Node ends a `Connection: close` response with `socket.destroySoon()`, which
 * closes the socket as soon as the answer is flushed. If the client is still
 * sending, the kernel then answers its data with a reset, and many clients
 * report that reset instead of the answer they already received. Instead, half
 * close (FIN after the answer), keep reading and discarding until the client
 * finishes or `LINGER_MS` passes, then close — as nginx's lingering close does.
 */
export function lingeringClose(socket: Socket): void {
  const linger = function (this: Socket) {
    this.end();
    const destroy = () => this.destroy();
    const timer = setTimeout(destroy, LINGER_MS);
    timer.unref();
    // No 'data' listener here: on a socket the HTTP parser consumes natively, adding
    // one unconsumes it, and if the parser had paused reading (request backpressure)
    // reading never restarts, so the client's unread data ends in a reset. The
    // parser keeps draining the (resumed or dumped) request; resume() restarts
    // reading if it was paused.
    this.resume();
    this.once('end', destroy);
    this.once('close', () => clearTimeout(timer));
  };
  (socket as Socket & { destroySoon: () => void }).destroySoon = linger;
}
