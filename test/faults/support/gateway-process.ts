/**
 * One gateway under fault: a config directory (optionally on a filesystem the
 * test mounted) and the real CLI started on it, restartable after a kill.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type RunningCli, startCli } from '../../helpers/cli.js';
import { tempDir, writeConfig } from '../../helpers/gateway.js';

export class GatewayProcess {
  readonly configPath: string;
  private current?: RunningCli;

  constructor(
    readonly dir: string = tempDir('agentgate-faults-'),
    override: Record<string, unknown> = {},
    /** Extra environment for the gateway process (e.g. NODE_OPTIONS). */
    private readonly env: NodeJS.ProcessEnv = {},
  ) {
    this.configPath = writeConfig(dir, override);
  }

  get dbPath(): string {
    return join(this.dir, 'state', 'agentgate.db');
  }

  get cli(): RunningCli {
    if (!this.current) throw new Error('the gateway is not running');
    return this.current;
  }

  get url(): string {
    return this.cli.url;
  }

  get pid(): number {
    return this.cli.child.pid as number;
  }

  get running(): boolean {
    const child = this.current?.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  async start(): Promise<this> {
    // Only --config decides which store is used, never the caller's environment.
    this.current = await startCli(['--config', this.configPath, '--port', '0'], {
      AGENTGATE_CONFIG: '',
      AGENTGATE_HOME: '',
      ...this.env,
    });
    return this;
  }

  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.cli.kill(signal);
  }

  /** SIGKILL if still running (for afterEach/afterAll). */
  async stop(): Promise<void> {
    if (this.running) await this.cli.kill('SIGKILL');
  }

  /** Every event id and run id in the store, read through a read-only connection. */
  storedIds(): { events: Set<string>; runs: Set<string> } {
    return withReadOnlyDb(this.dbPath, (db) => ({
      events: new Set(db.prepare('SELECT id FROM events').pluck().all() as string[]),
      runs: new Set(db.prepare('SELECT id FROM runs').pluck().all() as string[]),
    }));
  }
}

export function withReadOnlyDb<T>(path: string, use: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return use(db);
  } finally {
    db.close();
  }
}

/** Anonymous resident memory of a process in bytes (heap, stacks; not the mmapped SQLite file). */
export function rssAnonBytes(pid: number): number {
  const match = /^RssAnon:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no RssAnon in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}
