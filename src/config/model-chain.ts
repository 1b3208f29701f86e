/**
 * An agent's `model` setting (docs/configuration.md, "Models"): a model reference, or
 * `{ primary, fallbacks }` — the model to call and, in order, the ones a call goes to when
 * the one before it failed in a way that may pass (docs/agent-runs.md, "Fallbacks"). A
 * string means no fallbacks. References may be aliases of `agents.defaults.models`.
 */

export type ModelSetting = string | { primary: string; fallbacks: string[] };

/** The model called first. */
export function primaryOf(setting: ModelSetting): string {
  return typeof setting === 'string' ? setting : setting.primary;
}

/** Every reference of the setting, the primary first, each with its key path under `at`. */
export function chainRefsOf(setting: ModelSetting, at: string): { ref: string; at: string }[] {
  if (typeof setting === 'string') return [{ ref: setting, at }];
  return [
    { ref: setting.primary, at: `${at}.primary` },
    ...setting.fallbacks.map((ref, index) => ({ ref, at: `${at}.fallbacks[${index}]` })),
  ];
}
