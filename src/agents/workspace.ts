/**
 * Files an agent's workspace may hold: `SYSTEM.md` (the agent's system prompt)
 * and `HEARTBEAT.md` (standing instructions for heartbeat turns). Read on every
 * turn, so editing them takes effect without a restart.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const SYSTEM_PROMPT_FILE = 'SYSTEM.md';
export const HEARTBEAT_FILE = 'HEARTBEAT.md';

export async function readWorkspaceFile(workspace: string, name: string): Promise<string | undefined> {
  try {
    const text = await readFile(join(workspace, name), 'utf8');
    return text.trim() === '' ? undefined : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
