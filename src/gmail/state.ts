/**
 * The receiver's durable state: the last Gmail history id it has handled and
 * the ids of recently forwarded messages (so the recovery path after an expired
 * history id does not forward them again). One small JSON file per account,
 * written atomically with mode 0600.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface GmailState {
  historyId?: string;
  /** Newest last; bounded. */
  forwarded: string[];
}

const FORWARDED_KEPT = 500;

export function stateFileFor(stateDir: string, account: string): string {
  return join(stateDir, `gmail-${account.replace(/[^A-Za-z0-9._@-]/g, '_')}.json`);
}

export function readGmailState(file: string): GmailState {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<GmailState>;
    return {
      historyId: typeof parsed.historyId === 'string' ? parsed.historyId : undefined,
      forwarded: Array.isArray(parsed.forwarded)
        ? parsed.forwarded.filter((id) => typeof id === 'string')
        : [],
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { forwarded: [] };
    throw new Error(`cannot read the Gmail receiver state ${file}: ${(error as Error).message}`);
  }
}

export function writeGmailState(file: string, state: GmailState): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  const kept = { historyId: state.historyId, forwarded: state.forwarded.slice(-FORWARDED_KEPT) };
  writeFileSync(temp, JSON.stringify(kept), { mode: 0o600 });
  renameSync(temp, file);
}

/** Gmail history ids are 64-bit numbers sent as strings or numbers: compare them as BigInt. */
export function newerHistoryId(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return BigInt(a) >= BigInt(b) ? a : b;
}
