/**
 * `agentgate usage` over the admin API (docs/usage.md, "The command line"): the tokens and cost
 * of the runs that finished in a window, per hook, token, agent or model, as
 * `GET /api/usage` sums them, printed as a table (the costliest first) with a total line.
 * Keys come from callers and the config: printed with control characters made visible.
 */
import { GatewayClient } from '../admin-client.js';
import { CliError } from '../cli-error.js';
import { printJson, table, visible } from '../format.js';
import { resolveTarget, type TargetOptions } from '../gateway-target.js';
import type { CliIo } from '../io.js';
import { pointInTime } from './runs.js';

/** `--by` as typed (usage-command.ts), and the API's `by`. */
const GROUPINGS = { hook: 'hook', token: 'tokenId', agent: 'agent', model: 'model' } as const;
type By = keyof typeof GROUPINGS;

export interface UsageOptions extends TargetOptions {
  by?: By;
  since?: string;
  until?: string;
  json?: boolean;
}

/** A group as the CLI reads it; fields checked before use. */
interface UsageGroup {
  key: string | null;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
}

export async function usageCommand(io: CliIo, options: UsageOptions): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const now = Date.now();
  const query = new URLSearchParams({ by: GROUPINGS[options.by ?? 'hook'] });
  query.set('since', pointInTime('--since', options.since ?? '24h', now));
  if (options.until !== undefined) query.set('until', pointInTime('--until', options.until, now));
  const answer = await client.expectOk({ path: `/api/usage?${query}`, auth: 'admin' });
  if (options.json) return printJson(io, answer);
  if (!Array.isArray(answer.usage)) throw new CliError('the gateway answered without usage');
  const groups = answer.usage as UsageGroup[];
  if (groups.length === 0) {
    io.console.log(`no runs finished since ${query.get('since')}`);
    return;
  }
  const total = groups.reduce(
    (sum, g) => ({
      key: 'total',
      runs: sum.runs + g.runs,
      inputTokens: sum.inputTokens + g.inputTokens,
      outputTokens: sum.outputTokens + g.outputTokens,
      cacheReadTokens: sum.cacheReadTokens + g.cacheReadTokens,
      cacheWriteTokens: sum.cacheWriteTokens + g.cacheWriteTokens,
      costUsd: g.costUsd === null ? sum.costUsd : (sum.costUsd ?? 0) + g.costUsd,
    }),
    {
      key: 'total',
      runs: 0,
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: null,
    } as UsageGroup,
  );
  const row = (g: UsageGroup) => [
    g.key === null ? '-' : visible(g.key),
    String(g.runs),
    count(g.inputTokens),
    count(g.cacheReadTokens),
    count(g.cacheWriteTokens),
    count(g.outputTokens),
    dollars(g.costUsd),
  ];
  const heading = (options.by ?? 'hook').toUpperCase();
  const rows = groups.map(row);
  if (groups.length > 1) rows.push(row(total));
  io.console.log(table([heading, 'RUNS', 'INPUT', 'CACHE READ', 'CACHE WRITE', 'OUTPUT', 'COST'], rows));
}

/** 1234567 → `1,234,567`. */
const count = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '?');

/** USD with cents, or four places below a cent; `-` for no price. */
function dollars(usd: number | null): string {
  if (usd === null) return '-';
  return `$${usd !== 0 && Math.abs(usd) < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}`;
}
