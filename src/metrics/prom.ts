/**
 * prom-client's metric classes, required file by file rather than through its
 * index (docs/performance.md, "Start-up and idle memory"): the index also loads
 * the process defaults, which require all of @opentelemetry/api, the push
 * gateway client, the cluster aggregator and summaries — about 75 modules the
 * gateway does not use at start. The process defaults load at the first scrape
 * (process-metrics.ts), when they were made anyway. These are the same modules
 * the index exports, so the classes are the same.
 */
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
export const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
export const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
export const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;

export type Registry = Prom.Registry;
export type Counter<T extends string = string> = Prom.Counter<T>;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
