/**
 * A turn's usage as it goes (docs/usage.md): each model call's tokens added as the call
 * returns, counted in the metrics (`agentgate_model_tokens_total`, `agentgate_model_cost_usd_total`),
 * and the usage an earlier attempt's model steps committed added without being counted again.
 * At the end, the sum and its cost at the model's price (null when the model has none), for the
 * run's completion or the heartbeat's record.
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
  private model: ResolvedModel | undefined;
  private calls = 0;

  constructor(private readonly metrics?: UsageMetrics) {}

  /** The model the turn calls (a turn calls one). */
  using(model: ResolvedModel): void {
    this.model = model;
  }

  /** A model call of this attempt returned, having used `usage`. */
  called(usage: ModelUsage): void {
    this.add(usage);
    const model = this.model;
    if (!model) return;
    const cost = model.price ? costOf(usage, model.price) : null;
    this.metrics?.modelCallUsage(model.provider.name, model.model, usage, cost);
  }

  /** Usage an earlier attempt committed with its model steps (a resumed tool loop). */
  committed(usage: ModelUsage): void {
    this.add(usage);
  }

  /** The turn's usage so far, and its cost; undefined when no call reported any. */
  result(): RunUsage | undefined {
    if (this.calls === 0 && !this.model) return undefined;
    const price = this.model?.price;
    return {
      model: this.model?.ref ?? null,
      ...this.total,
      costUsd: price ? costOf(this.total, price) : null,
    };
  }

  private add(usage: ModelUsage): void {
    this.calls++;
    this.total = addUsage(this.total, usage);
  }
}

/** The metrics to count calls in, when they have the method (a test's metrics may not). */
export function meterFor(metrics: Partial<UsageMetrics> | undefined): UsageMetrics | undefined {
  return metrics?.modelCallUsage ? (metrics as UsageMetrics) : undefined;
}
