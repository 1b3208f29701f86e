/**
 * Output for people: aligned columns, relative times, durations. (`--json`
 * prints the API's own answer instead, for scripts.)
 */
import type { CliIo } from './io.js';

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, column) =>
    Math.max(width(header), ...rows.map((row) => width(row[column] ?? ''))),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : pad(cell, widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `label: value` lines with the labels aligned. */
export function fields(entries: readonly (readonly [string, string])[]): string {
  const labelWidth = Math.max(...entries.map(([label]) => label.length)) + 1;
  return entries.map(([label, value]) => `${pad(`${label}:`, labelWidth)} ${value}`.trimEnd()).join('\n');
}

/** "12s ago", "5m ago", "3h ago", "2d ago" (or "in 5m" for a time ahead); "-" for none. */
export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const at = Date.parse(iso);
  if (!Number.isFinite(at)) return iso;
  const ms = now - at;
  const text = shortDuration(Math.abs(ms));
  if (Math.abs(ms) < 1000) return 'just now';
  return ms >= 0 ? `${text} ago` : `in ${text}`;
}

/** A duration from two ISO times ("-" until both are known). */
export function between(from: string | null | undefined, to: string | null | undefined): string {
  if (!from || !to) return '-';
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? shortDuration(ms) : '-';
}

/** 850ms, 4.2s, 3m 5s, 2h 10m, 3d 4h. */
export function shortDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60 >= 1 ? ` ${Math.floor(seconds % 60)}s` : ''}`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h${minutes % 60 ? ` ${minutes % 60}m` : ''}`;
  const days = Math.floor(hours / 24);
  return `${days}d${hours % 24 ? ` ${hours % 24}h` : ''}`;
}

/**
 * One line of at most `max` characters: whitespace folded, an ellipsis when cut, and the
 * control characters a terminal would act on (escape sequences, bidi overrides) shown as
 * `\x1b`/`\u202e` — the text may be a run's name, a tool's arguments or its result.
 */
export function oneLine(text: string | null | undefined, max = 60): string {
  if (text === null || text === undefined || text === '') return '-';
  const flat = visible(text.replace(/\s+/g, ' ').trim());
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** C0, DEL and C1 (`\p{Cc}`), and the bidi marks, embeddings, overrides and isolates. */
const CONTROLS = /\p{Cc}|[\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** Text with its terminal control characters written out as escapes. */
export function visible(text: string): string {
  return text.replace(CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`;
  });
}

export function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Display width: code points (good enough for ids, statuses and times). */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, to: number): string {
  return text + ' '.repeat(Math.max(0, to - width(text)));
}
