/**
 * Files an agent's workspace may hold: `SYSTEM.md` (the agent's system prompt)
 * and `HEARTBEAT.md` (standing instructions for heartbeat turns). Editing them
 * takes effect without a restart, within a second: a file is read at most once
 * per second and path (turns starting meanwhile share that read). Reading it
 * for every turn cost a thread-pool round trip per run, a fifth of a short
 * turn's time when runs execute by the thousand per second (docs/design-decisions.md).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const SYSTEM_PROMPT_FILE = 'SYSTEM.md';
export const HEARTBEAT_FILE = 'HEARTBEAT.md';

/** How long a read of a workspace file is reused. */
export const WORKSPACE_FILE_TTL_MS = 1000;

const recent = new Map<string, { readAt: number; text: Promise<string | undefined> }>();

export function readWorkspaceFile(workspace: string, name: string): Promise<string | undefined> {
  const path = join(workspace, name);
  const now = performance.now();
  const cached = recent.get(path);
  if (cached && now - cached.readAt < WORKSPACE_FILE_TTL_MS) return cached.text;
  const text = readFresh(path);
  recent.set(path, { readAt: now, text });
  // A failed read is not reused: the next turn tries again.
  text.catch(() => recent.delete(path));
  return text;
}

async function readFresh(path: string): Promise<string | undefined> {
  try {
    const text = await readFile(path, 'utf8');
    return text.trim() === '' ? undefined : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
