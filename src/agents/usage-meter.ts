/**
 * A turn's usage as it goes (docs/usage.md): each model call's tokens added as the call
 * returns, priced at that call's own model (a fallback's calls at the fallback's price;
 * docs/agent-runs.md, "Fallbacks"), counted in the metrics (`agentgate_model_tokens_total`,
 * `agentgate_model_cost_usd_total`), and the usage an earlier attempt's model steps committed
 * added without being counted again. At the end, the sum, its cost (null when a call's model has
 * no price) and the model that answered, for the run's completion or the heartbeat's record.
 */
import type { RunUsage } from '../store/types.js';
import type { ResolvedModel } from './models.js';
import { costOf } from './providers/kit/prices.js';
import { addUsage, type ModelUsage, NO_USAGE } from './providers/kit/usage.js';

/** Counts model calls' tokens and cost (docs/operating.md, "Metrics"). */
export interface UsageMetrics {
  modelCallUsage(provider: string, model: string, usage: ModelUsage, costUsd: number | null): void;
}

export class UsageMeter {
  private total: ModelUsage = NO_USAGE;
  /** The sum of each call's cost; null once a call's model had no price. */
  private cost: number | null = 0;
  private model: ResolvedModel | undefined;
  private calls = 0;

  constructor(private readonly metrics?: UsageMetrics) {}

  /** The model the turn calls now (its primary, then each fallback it goes to): the last one answered. */
  using(model: ResolvedModel): void {
    this.model = model;
  }

  /** A model call of this attempt, made to `model`, returned having used `usage`. */
  called(usage: ModelUsage, model: ResolvedModel): void {
    const cost = model.price ? costOf(usage, model.price) : null;
    this.add(usage, cost);
    this.metrics?.modelCallUsage(model.provider.name, model.model, usage, cost);
  }

  /**
   * Usage an earlier attempt committed with its model steps (a resumed tool loop), priced at
   * the model the turn calls now: the steps do not say which model of the chain made them.
   */
  committed(usage: ModelUsage): void {
    const price = this.model?.price;
    this.add(usage, price ? costOf(usage, price) : null);
  }

  /** The turn's usage so far, and its cost; undefined when no call reported any. */
  result(): RunUsage | undefined {
    if (this.calls === 0 && !this.model) return undefined;
    const costUsd = this.calls === 0 ? (this.model?.price ? 0 : null) : this.cost;
    return { model: this.model?.ref ?? null, ...this.total, costUsd };
  }

  private add(usage: ModelUsage, cost: number | null): void {
    this.calls++;
    this.total = addUsage(this.total, usage);
    this.cost = this.cost === null || cost === null ? null : this.cost + cost;
  }
}

/** The metrics to count calls in, when they have the method (a test's metrics may not). */
export function meterFor(metrics: Partial<UsageMetrics> | undefined): UsageMetrics | undefined {
  return metrics?.modelCallUsage ? (metrics as UsageMetrics) : undefined;
}
