/**
 * Tool selectors (docs/tools.md, "Choosing tools"): `<server>.<tool>`, where `*` stands for
 * any run of characters within its part (`repo.*`, `*.search`, `tickets.create_*`). A
 * run's tools are those the agent's `allow` selects and, when the mapping has `tools`, that
 * one of the mapping's selectors selects too: a mapping narrows, never widens. Only the
 * config reaches this; nothing of a hook's payload does.
 */

/** A selector split at its first dot: the server part never holds one. */
interface Parsed {
  server: RegExp;
  tool: RegExp;
  /** The server part without wildcards, when it has none. */
  exactServer: string | undefined;
}

const parsedCache = new Map<string, Parsed>();

function parse(selector: string): Parsed {
  let parsed = parsedCache.get(selector);
  if (!parsed) {
    const dot = selector.indexOf('.');
    const server = dot < 0 ? selector : selector.slice(0, dot);
    const tool = dot < 0 ? '' : selector.slice(dot + 1);
    parsed = {
      server: wildcard(server),
      tool: wildcard(tool),
      exactServer: server.includes('*') ? undefined : server,
    };
    parsedCache.set(selector, parsed);
  }
  return parsed;
}

function wildcard(pattern: string): RegExp {
  const source = pattern
    .split('*')
    .map((piece) => piece.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's');
}

/** `<server>.<tool>` split at its first dot. */
export function splitToolName(name: string): { server: string; tool: string } {
  const dot = name.indexOf('.');
  return dot < 0 ? { server: name, tool: '' } : { server: name.slice(0, dot), tool: name.slice(dot + 1) };
}

export function selectorMatches(selector: string, name: string): boolean {
  const { server, tool } = splitToolName(name);
  const parsed = parse(selector);
  return parsed.server.test(server) && parsed.tool.test(tool);
}

export function anyMatches(selectors: readonly string[], name: string): boolean {
  return selectors.some((selector) => selectorMatches(selector, name));
}

/** Whether a run may use the tool: the agent allows it, and the mapping (when it narrows) keeps it. */
export function isOffered(name: string, allow: readonly string[], mappingTools?: readonly string[]): boolean {
  return anyMatches(allow, name) && (mappingTools === undefined || anyMatches(mappingTools, name));
}

/** Whether the selector can select any tool of this server (so the server is worth starting). */
export function selectsServer(selector: string, server: string): boolean {
  return parse(selector).server.test(server);
}

/** The servers whose tools a run may use: named by `allow` and, when set, by the mapping's `tools`. */
export function serversFor(
  servers: readonly string[],
  allow: readonly string[],
  mappingTools?: readonly string[],
): string[] {
  const named = (selectors: readonly string[], server: string) =>
    selectors.some((s) => selectsServer(s, server));
  return servers.filter(
    (server) => named(allow, server) && (mappingTools === undefined || named(mappingTools, server)),
  );
}

/** The server a selector names without a wildcard, for the unknown-server check; undefined with `*`. */
export function exactServerOf(selector: string): string | undefined {
  return parse(selector).exactServer;
}
