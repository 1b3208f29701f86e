import type { FastifyInstance } from 'fastify';

/** How often a closing server looks for connections that have just gone idle. */
const IDLE_SWEEP_MS = 50;

/**
 * Stops accepting and waits for the requests in flight. Closing drops the
 * connections idle at that moment only; a kept-alive connection whose request
 * was still in flight would go idle afterwards and hold the close until its
 * keep-alive timeout (72 s). Sweeping idle connections until the close
 * completes ends each one as soon as its last answer is out.
 */
export async function closeServer(app: FastifyInstance): Promise<void> {
  const sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
  }
}
