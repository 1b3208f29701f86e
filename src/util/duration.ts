/** "500ms", "45s", "30m", "1h", "2d", "1.5h" → milliseconds; "0" → 0 (off). The config schema guarantees the form. */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(text: string): number {
  if (text === '0') return 0;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text);
  if (!match) throw new Error(`not a duration: "${text}"`);
  return Math.round(Number(match[1]) * (UNIT_MS[match[2] as string] as number));
}
