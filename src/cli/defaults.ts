/**
 * Values the command definitions (help, option choices) and the commands share,
 * kept apart so `agentgate --help` loads no command module.
 */

/** A run's `status` (docs/operating.md, "Admin API"). */
export const RUN_STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'timed_out'] as const;
/** `mode` and `wakeMode` (docs/endpoints.md; the config schema's WAKE_MODES, which loads zod). */
export const WAKE_MODES = ['now', 'next-heartbeat'] as const;
/** `send agent --wait`: longer than the default run timeout (600 s), so the run ends first. */
export const DEFAULT_MAX_WAIT_S = 900;
/** `doctor`: time limit of each service probe. */
export const DEFAULT_PROBE_TIMEOUT_S = 5;
