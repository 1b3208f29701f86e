/**
 * The live hooks configuration (token, mappings, presets, policies): one state object
 * that a config reload swaps whole, once the new one is fully built; `hooks.path` and
 * `hooks.enabled` take effect on restart. A request keeps the state it started with
 * (hook-request.ts), so a reload mid-request changes nothing of it.
 */
import type { IdentityMatcher } from '../auth/guards.js';
import { type HookToken, HookTokenTable, type SourcesMatcher } from '../auth/hook-tokens.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { HookPolicy } from '../hook-model/policy.js';
import type { Logger } from '../log.js';
import { HookRouter } from '../mappings/router.js';
import type { TransformLimits } from '../mappings/transforms.js';
import { sourcesMatcher } from '../util/cidr.js';
import { HookRateLimiter } from './hook-rate.js';

export interface IngressState {
  config: ResolvedConfig;
  /** The hook tokens (docs/senders.md); undefined when none is configured (every request 401). */
  matchToken: IdentityMatcher<HookToken> | undefined;
  /** `hooks.allowedSources`: where every hook request must come from; undefined for anywhere. */
  fromAllowedSource: SourcesMatcher | undefined;
  policy: HookPolicy;
  router: HookRouter;
}

/** The live hooks configuration; `reload` swaps it only when the new one is fully built. */
export class HookIngress {
  /** Per-hook request rates (docs/callers.md); kept across reloads, so a reload grants no fresh minute. */
  readonly rates = new HookRateLimiter();

  private constructor(
    private current: IngressState,
    private readonly transformLimits: Partial<TransformLimits>,
  ) {}

  static async create(
    config: ResolvedConfig,
    log: Logger,
    transformLimits: Partial<TransformLimits> = {},
  ): Promise<HookIngress> {
    return new HookIngress(await HookIngress.build(config, log, transformLimits), transformLimits);
  }

  private static async build(
    config: ResolvedConfig,
    log: Logger,
    transformLimits: Partial<TransformLimits>,
  ): Promise<IngressState> {
    const tokens = new HookTokenTable(config.hooks.tokens, sourcesMatcher);
    const everyToken = config.hooks.allowedSources;
    return {
      config,
      matchToken: tokens.empty ? undefined : (presented) => tokens.match(presented),
      fromAllowedSource: everyToken === undefined ? undefined : sourcesMatcher(everyToken),
      policy: new HookPolicy(config),
      router: await HookRouter.create(config, log, transformLimits),
    };
  }

  get state(): IngressState {
    return this.current;
  }

  /**
   * The `maxConcurrentRuns` of the hook a run source names (`hook:<name>`;
   * docs/callers.md) — the strictest of the hook's candidate targets — for the
   * worker's claims; undefined for no cap.
   */
  runCap(source: string): number | undefined {
    if (!source.startsWith('hook:')) return undefined;
    let cap: number | undefined;
    for (const target of this.current.router.candidates(source.slice('hook:'.length))) {
      const max = target.maxConcurrentRuns;
      if (max !== undefined && (cap === undefined || max < cap)) cap = max;
    }
    return cap;
  }

  async reload(config: ResolvedConfig, log: Logger): Promise<void> {
    const previous = this.current;
    this.current = await HookIngress.build(config, log, this.transformLimits);
    // Not awaited: the old transforms' workers end as their last calls finish.
    void previous.router.retire();
  }

  /** Ends the transform workers (gateway stop). */
  close(): Promise<void> {
    return this.current.router.terminate();
  }
}
