/**
 * `api: "echo"` — offline and deterministic, so the quick start works without any
 * account and tests can predict every reply. It answers `Echo: <last user message>`,
 * and acknowledges an idle heartbeat the way a real agent is asked to.
 */

import { throwIfAborted } from '../kit/abort.js';
import { HEARTBEAT_MARKER, HEARTBEAT_OK } from '../kit/heartbeat-protocol.js';
import {
  type CompletionRequest,
  type CompletionResult,
  isChatMessage,
  type ModelProvider,
} from '../kit/types.js';

export function createEchoProvider(name: string): ModelProvider {
  return {
    name,
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      throwIfAborted(request.signal);
      // It takes no tools: a tool loop's results are not its to read.
      const lastUser = request.messages
        .filter(isChatMessage)
        .reverse()
        .find((m) => m.role === 'user');
      const content = lastUser?.content ?? '';
      const text = isIdleHeartbeat(content) ? HEARTBEAT_OK : `Echo: ${content}`;
      // No stream of its own: one piece, the whole reply.
      request.onDelta?.(text);
      return { text };
    },
  };
}

/**
 * A heartbeat prompt lists each pending event as a `- ` line; with none listed there
 * is nothing to act on, which is exactly when a real agent should answer HEARTBEAT_OK.
 */
function isIdleHeartbeat(content: string): boolean {
  if (!content.includes(HEARTBEAT_MARKER)) return false; // most turns: no split needed
  const lines = content.split(/\r?\n/);
  return lines.some((line) => line.trim() === HEARTBEAT_MARKER) && !lines.some((l) => l.startsWith('- '));
}
