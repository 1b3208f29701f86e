/**
 * The last answer on a connection: written straight to the socket in the
 * gateway's JSON error shape with `Connection: close`, then a lingering close
 * (docs/errors.md).
 *
 * Why not through Node's ServerResponse: a `Connection: close` response makes
 * Node call `socket.destroySoon()` when it finishes, which closes the socket as
 * soon as the answer is flushed. A client still sending (a body over the
 * limit, headers that never end) then gets a TCP reset for its data, and many
 * clients report that reset instead of the answer they already received.
 * Written here, the connection instead half-closes (FIN after the answer),
 * keeps reading and discarding until the client finishes or `LINGER_MS`
 * passes, then closes — as nginx's lingering close does. Only public socket
 * methods are used.
 */
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { HttpError } from './errors.js';

/** How long a connection that got a closing answer keeps draining input before it is cut. */
export const LINGER_MS = 5_000;

/** Sockets that already carry their last answer: nothing more may be written to them. */
const answered = new WeakSet<Socket>();

export function hasClosingAnswer(socket: Socket): boolean {
  return answered.has(socket);
}

/**
 * Answers `response`'s request with `error` and closes the connection. A
 * pipelined request whose response is still queued behind earlier ones is
 * answered when its turn comes (Node assigns the socket then), so answers never
 * overtake each other. The caller must not send `response` itself.
 */
export function sendClosingAnswer(response: ServerResponse, error: HttpError): void {
  if (response.socket) writeClosingAnswer(response.socket, error);
  else response.once('socket', (socket: Socket) => writeClosingAnswer(socket, error));
}

/** Writes `error` as the connection's last answer, once; later calls for the same socket do nothing. */
export function writeClosingAnswer(socket: Socket, error: HttpError, lingerMs = LINGER_MS): void {
  if (answered.has(socket) || socket.destroyed || !socket.writable) return;
  answered.add(socket);
  socket.write(serialize(error));
  lingeringClose(socket, lingerMs);
}

function serialize(error: HttpError): string {
  const body = JSON.stringify(error.toJSON());
  const lines = [
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    `date: ${new Date().toUTCString()}`,
  ];
  for (const [name, value] of Object.entries(error.headers)) {
    if (name.toLowerCase() !== 'connection') lines.push(`${name}: ${value}`);
  }
  lines.push('connection: close');
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

function lingeringClose(socket: Socket, lingerMs: number): void {
  const destroy = () => socket.destroy();
  if (socket.readableEnded) {
    // The client is done sending: close once the answer and our FIN are out.
    socket.end(destroy);
    return;
  }
  socket.end();
  const timer = setTimeout(destroy, lingerMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', destroy);
  // No 'data' listener: the HTTP parser consumes this socket natively, and one
  // would switch it to JS reads. What still arrives goes to the parser, which
  // discards it (the request body was resumed, or the parser already failed);
  // resume() restarts reading in case request backpressure had paused it.
  socket.resume();
}
