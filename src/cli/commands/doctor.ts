/**
 * `agentgate doctor`: one `ok`/`warn`/`fail` line per check, a summary, exit 1
 * on any `fail`; `--json` for scripts. Secrets are never printed: the checks
 * name the key that holds one, not its value.
 */
import { locateConfigFile } from '../../config/paths.js';
import { CliError } from '../cli-error.js';
import { DEFAULT_PROBE_TIMEOUT_S } from '../defaults.js';
import { runDoctor } from '../doctor/run-doctor.js';
import type { CheckResult, Verdict } from '../doctor/types.js';
import { printJson } from '../format.js';
import type { CliIo } from '../io.js';
import { startProgress } from '../progress.js';

export interface DoctorCommandOptions {
  config?: string;
  json?: boolean;
  timeout?: number;
}

export async function doctorCommand(io: CliIo, options: DoctorCommandOptions): Promise<void> {
  const configPath = locateConfigFile(options.config, io.env);
  const progress = startProgress('checking…', io.stderr);
  let checks: CheckResult[];
  try {
    checks = await runDoctor({
      configPath,
      env: io.env,
      timeoutMs: (options.timeout ?? DEFAULT_PROBE_TIMEOUT_S) * 1000,
      onProgress: (done, total, pending) =>
        progress.update(
          `checking services ${done}/${total}${pending.length ? `: ${pending.join(', ')}` : ''}`,
        ),
    });
  } finally {
    progress.stop();
  }
  const summary = { ok: 0, warn: 0, fail: 0 };
  for (const check of checks) summary[check.status]++;
  if (options.json) {
    printJson(io, { ok: summary.fail === 0, config: configPath, summary, checks });
  } else {
    io.console.log(render(checks, io.stdout.isTTY === true && !io.env.NO_COLOR));
    io.console.log(`\n${summary.ok} ok, ${summary.warn} warn, ${summary.fail} fail`);
  }
  if (summary.fail > 0) throw new CliError('', 1);
}

const COLORS: Record<Verdict, string> = { ok: '\x1b[32m', warn: '\x1b[33m', fail: '\x1b[31m' };

export function render(checks: CheckResult[], color: boolean): string {
  const nameWidth = Math.max(...checks.map((check) => check.name.length));
  const lines: string[] = [];
  for (const check of checks) {
    const verdict = check.status.padEnd(4);
    const shown = color ? `${COLORS[check.status]}${verdict}\x1b[0m` : verdict;
    lines.push(`${shown}  ${check.name.padEnd(nameWidth)}  ${check.message}`);
    for (const detail of check.details ?? []) lines.push(`${' '.repeat(nameWidth + 8)}- ${detail}`);
  }
  return lines.join('\n');
}
