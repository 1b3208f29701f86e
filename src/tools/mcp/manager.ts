/**
 * The configured MCP servers, one connection each (docs/tools.md, "Servers"). A reload
 * replaces the connection of each server whose config changed — the old one is stopped
 * once its calls in flight have ended, the new one starts on next use — and stops the
 * servers no longer configured.
 */
import type { ToolServerConfig } from '../config.js';
import { type ConnectionContext, ServerConnection } from './connection.js';

export class ServerManager {
  private readonly connections = new Map<string, ServerConnection>();

  constructor(
    servers: Record<string, ToolServerConfig>,
    private readonly ctx: ConnectionContext,
  ) {
    for (const [name, config] of Object.entries(servers))
      this.connections.set(name, this.connect(name, config));
  }

  names(): string[] {
    return [...this.connections.keys()];
  }

  get(name: string): ServerConnection | undefined {
    return this.connections.get(name);
  }

  /** Applies a changed `tools.servers`; answers which servers were restarted, added and removed. */
  reload(servers: Record<string, ToolServerConfig>): {
    changed: string[];
    added: string[];
    removed: string[];
  } {
    const changes = { changed: [] as string[], added: [] as string[], removed: [] as string[] };
    for (const [name, connection] of this.connections) {
      if (name in servers) continue;
      connection.retire();
      this.connections.delete(name);
      changes.removed.push(name);
    }
    for (const [name, config] of Object.entries(servers)) {
      const current = this.connections.get(name);
      if (current && JSON.stringify(current.config) === JSON.stringify(config)) continue;
      current?.retire();
      this.connections.set(name, this.connect(name, config));
      (current ? changes.changed : changes.added).push(name);
    }
    return changes;
  }

  async close(): Promise<void> {
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(all.map((connection) => connection.stop()));
  }

  private connect(name: string, config: ToolServerConfig): ServerConnection {
    return new ServerConnection(name, config, this.ctx);
  }
}
