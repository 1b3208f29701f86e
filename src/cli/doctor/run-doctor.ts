/**
 * Runs every doctor check: the local ones (config, security settings, file
 * modes) at once, then the probes of outside services (the gateway itself, the
 * store, each provider and channel) in parallel, each under its own short time
 * limit, reporting progress as they finish.
 */

import { resolveConfigPath } from '../../config/paths.js';
import { type ResolvedStore, resolveStore } from '../../store/drivers/registry.js';
import { alertsCheck } from './alerts-check.js';
import { channelProbes } from './channel-probes.js';
import { type ConfigSource, readConfigSource } from './config-source.js';
import { fileModeChecks } from './file-modes.js';
import { gatewayProbe } from './gateway-probe.js';
import { hookTokenChecks } from './hook-tokens.js';
import { providerProbes } from './provider-probes.js';
import { securityChecks } from './security-checks.js';
import { storeProbe } from './store-check.js';
import { toolServerProbes, toolsCheck } from './tool-servers.js';
import { type CheckResult, fail, ok, type Probe, warn } from './types.js';

export interface DoctorOptions {
  configPath: string;
  env: NodeJS.ProcessEnv;
  /** Time limit of each probe. */
  timeoutMs: number;
  /** Called as probes finish: done of total. */
  onProgress?: (done: number, total: number, pending: string[]) => void;
}

export async function runDoctor(options: DoctorOptions): Promise<CheckResult[]> {
  const source = readConfigSource(options.configPath, options.env);
  const local = [
    configCheck(source),
    ...securityChecks(source),
    ...hookTokenChecks(source),
    ...fileModeChecks(source),
    alertsCheck(source),
    toolsCheck(source),
  ].filter((check): check is CheckResult => check !== undefined);
  const probes = [
    ...probesFor(source, options.timeoutMs, options.env),
    ...toolServerProbes(source, options.timeoutMs),
  ];
  const pending = new Set(probes.map((probe) => probe.name));
  let done = 0;
  options.onProgress?.(0, probes.length, [...pending]);
  const results = await Promise.all(
    probes.map(async (probe) => {
      // A probe's own limit is the outbound client's; this one also bounds the store driver.
      const signal = AbortSignal.timeout(options.timeoutMs + 1000);
      let result: CheckResult;
      try {
        result = await Promise.race([probe.run(signal), timedOut(probe.name, signal, options.timeoutMs)]);
      } catch (error) {
        result = fail(probe.name, `check crashed: ${(error as Error).message}`);
      }
      pending.delete(probe.name);
      options.onProgress?.(++done, probes.length, [...pending]);
      return result;
    }),
  );
  return [...local, ...results];
}

function configCheck(source: ConfigSource): CheckResult {
  if (!source.exists) {
    return fail(
      'config',
      `no config file at ${source.path} (\`agentgate run\` writes a starter config there)`,
    );
  }
  if (source.problems.length > 0) {
    return {
      ...fail(
        'config',
        `${source.path}: ${source.problems.length} problem(s); \`agentgate run\` refuses to start`,
      ),
      details: source.problems,
    };
  }
  // Token length and expiry warnings are the token checks' to report, an agent's tools the tools check's.
  const warnings = source.warnings.filter(
    (w) =>
      !/^(hooks\.token|gateway\.auth\.token|hooks\.tokens\[\d+\]\.(token|notAfter)|agents\.list\[\d+\]\.tools):/.test(
        w,
      ),
  );
  if (warnings.length > 0)
    return { ...warn('config', `${source.path}: valid, with warnings`), details: warnings };
  return ok('config', `${source.path} parses and validates`);
}

function probesFor(source: ConfigSource, timeoutMs: number, env: NodeJS.ProcessEnv): Probe[] {
  const probes: Probe[] = [];
  if (source.resolved) probes.push(gatewayProbe(source.resolved, timeoutMs));
  const raw = source.raw;
  if (!raw) return probes;
  const store: ResolvedStore =
    source.resolved?.store ?? resolveStore(raw.store, (path) => resolveConfigPath(path, source.configDir));
  probes.push(storeProbe(store, timeoutMs));
  probes.push(...providerProbes(raw, timeoutMs, env));
  probes.push(...channelProbes(raw.channels, timeoutMs));
  return probes;
}

function timedOut(name: string, signal: AbortSignal, timeoutMs: number): Promise<CheckResult> {
  return new Promise((resolve) => {
    signal.addEventListener('abort', () => resolve(fail(name, `no answer within ${timeoutMs / 1000} s`)), {
      once: true,
    });
  });
}
