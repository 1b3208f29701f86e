/**
 * Resolves a hook name to its candidate targets (docs/mappings.md):
 * `/wake` and `/agent` first, then `hooks.mappings` in order,
 * then enabled presets. A mapping's `match.path` must equal the name when
 * given; its `match.source` is checked on the payload afterwards, so the first
 * candidate that accepts the payload wins.
 */
import type { ResolvedConfig } from '../config/resolved.js';
import { builtInTargets, type HookTarget } from '../hook-model/targets.js';
import type { Logger } from '../log.js';
import { gmailPreset } from './gmail-preset.js';
import { mappedTarget } from './mapped-target.js';
import { loadTransform, type TransformLimits, type TransformPool } from './transforms.js';

interface MappingEntry {
  path: string | undefined;
  target: HookTarget;
}

export class HookRouter {
  private constructor(
    private readonly builtIns: Map<string, HookTarget>,
    private readonly mappings: MappingEntry[],
    private readonly presets: Map<string, HookTarget>,
    /** The transforms' worker pools: they outlive requests, so the router's owner ends them. */
    private readonly transforms: TransformPool[],
  ) {
    this.anySignatureAuth = mappings.some((entry) => entry.target.signatureIsCredential === true);
  }

  /** Whether any mapping takes `auth: "signature"`: without one, no request pays for the question. */
  private readonly anySignatureAuth: boolean;

  /** Builds the router, loading every transform module now so a broken one fails at start or reload. */
  static async create(
    config: ResolvedConfig,
    log: Logger,
    transformLimits: Partial<TransformLimits> = {},
  ): Promise<HookRouter> {
    const { hooks } = config;
    const mappings: MappingEntry[] = [];
    const transforms: TransformPool[] = [];
    for (const [index, mapping] of hooks.mappings.entries()) {
      const id = mapping.id ?? `mapping-${index}`;
      let transform: TransformPool | undefined;
      if (mapping.transform) {
        try {
          transform = await loadTransform(
            {
              transformsRoot: hooks.transformsRoot,
              transformsDir: hooks.transformsDir,
              module: mapping.transform.module,
              exportName: mapping.transform.export,
            },
            transformLimits,
          );
        } catch (error) {
          // The router will not be used: end the workers of the transforms loaded so far.
          await Promise.all(transforms.map((pool) => pool.terminate()));
          throw new Error(`hooks.mappings[${index}].transform.module: ${(error as Error).message}`);
        }
        transforms.push(transform);
      }
      const target = mappedTarget({ mapping, id, defaultMaxBodyBytes: hooks.maxBodyBytes, transform, log });
      mappings.push({ path: mapping.match?.path, target });
    }
    const presets = new Map<string, HookTarget>();
    if (hooks.presets.includes('gmail')) presets.set('gmail', gmailPreset());
    return new HookRouter(builtInTargets(config), mappings, presets, transforms);
  }

  /** After a reload: transform workers end once idle (late requests of this config are still served). */
  retire(): Promise<void> {
    return Promise.all(this.transforms.map((pool) => pool.retire())).then(() => {});
  }

  /** At shutdown: every transform worker is terminated. */
  terminate(): Promise<void> {
    return Promise.all(this.transforms.map((pool) => pool.terminate())).then(() => {});
  }

  /**
   * Whether the sender's signature alone opens this hook name (docs/senders.md, "Signatures as
   * the credential"): every target that may serve it takes `auth: "signature"`. A name one
   * token mapping may also serve needs the hook token, as that mapping does.
   */
  opensWithSignature(name: string): boolean {
    if (!this.anySignatureAuth) return false;
    const candidates = this.candidates(name);
    return candidates.length > 0 && candidates.every((target) => target.signatureIsCredential === true);
  }

  /** The targets that may serve this hook name, in precedence order; empty when none (404). */
  candidates(name: string): HookTarget[] {
    const builtIn = this.builtIns.get(name);
    if (builtIn) return [builtIn];
    const matched = this.mappings.filter((m) => m.path === undefined || m.path === name).map((m) => m.target);
    const preset = this.presets.get(name);
    return preset ? [...matched, preset] : matched;
  }
}
