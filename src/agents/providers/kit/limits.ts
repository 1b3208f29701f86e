/**
 * `models.providers.<name>.maxConcurrent` (docs/agent-runs.md, "Provider limits"): the model
 * calls in flight to that provider in one gateway process, whatever its API. Absent: no cap.
 */
import { z } from 'zod';

export const maxConcurrentField = z.number().int().positive().optional();
