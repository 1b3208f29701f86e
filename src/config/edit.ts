/**
 * Surgical edits of a JSON5 config file (used by `agentgate hooks gmail setup`;
 * docs/design-decisions.md): set one value or add one string to an array while every byte
 * outside the edited span — comments, formatting, key order, `${ENV}` strings —
 * stays exactly as it was.
 *
 * A small scanner records the source span of every object member and array
 * item; an edit either replaces one value span or inserts one new member after
 * the last member of its parent. Every result is re-parsed with JSON5 and
 * compared with the expected document before it is returned, so a bug here
 * throws instead of producing a broken file.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import JSON5 from 'json5';

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/** Returns the new file text; `value` is written as JSON5 (pretty, 2-space indent, keys unquoted when they are identifiers, strings double-quoted). */
export function setConfigValue(text: string, path: string[], value: unknown): string {
  if (path.length === 0) throw new Error('setConfigValue: the key path must not be empty');
  const before = parseText(text);
  const plain = toPlain(value, 'value', new Set());
  if (plain === undefined) throw new Error(`cannot set ${dotted(path)}: the value is undefined`);
  const doc = new ConfigDocument(text);
  const result = applyEdits(text, doc.setEdits(path, plain));
  return verified(result, withValue(before, path, plain), path);
}

/** Adds `item` to the string array at `path` if missing (creates the array, and parent objects, when absent); text unchanged when present. */
export function addToConfigArray(text: string, path: string[], item: string): string {
  if (path.length === 0) throw new Error('addToConfigArray: the key path must not be empty');
  const before = parseText(text);
  const current = valueAt(before, path);
  if (current === undefined) return setConfigValue(text, path, [item]);
  if (!Array.isArray(current)) throw new Error(`cannot add to ${dotted(path)}: it is not an array`);
  if (current.includes(item)) return text;
  const doc = new ConfigDocument(text);
  const result = applyEdits(text, doc.appendEdits(path, item));
  return verified(result, withValue(before, path, [...current, item]), path);
}

/** Reads the current value at `path` (JSON5.parse of the whole text), or undefined. */
export function getConfigValue(text: string, path: string[]): unknown {
  return valueAt(parseText(text), path);
}

/** Writes the file atomically (temp file in the same folder + rename) with mode 0600. */
export function writeConfigFile(path: string, text: string): void {
  parseText(text); // never write a file the gateway could not load
  // Write through a symlink to its target rather than replacing the link itself.
  const target = existsSync(path) ? realpathSync(path) : path;
  const temp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(temp, 0o600); // the open mode is filtered by the umask
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

// ---------------------------------------------------------------------------
// Parsing helpers over whole documents
// ---------------------------------------------------------------------------

type Plain = null | boolean | number | string | Plain[] | { [key: string]: Plain };

function dotted(path: string[]): string {
  return path.join('.');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** JSON5.parse with a clear message; the top level must be an object. */
function parseText(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON5.parse(text);
  } catch (error) {
    throw new Error(`config is not valid JSON5: ${(error as Error).message}`);
  }
  if (!isRecord(parsed)) throw new Error('config is not editable: its top level must be an object');
  return parsed;
}

function valueAt(root: unknown, path: string[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** Defines an own property (a plain assignment of `__proto__` would set the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A copy of `root` with `value` at `path`, creating missing parent objects: what an edit must produce. */
function withValue(root: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(root);
  let node: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    if (!isRecord(node[key]) || !Object.hasOwn(node, key)) setOwn(node, key, {});
    node = node[key] as Record<string, unknown>;
  }
  setOwn(node, path[path.length - 1] as string, value);
  return copy;
}

/** Throws unless `result` parses to exactly `expected` (the whole document, not just the edited key). */
function verified(result: string, expected: unknown, path: string[]): string {
  let reparsed: unknown;
  try {
    reparsed = JSON5.parse(result);
  } catch (error) {
    throw new Error(
      `internal error editing ${dotted(path)}: result is not valid JSON5 (${(error as Error).message})`,
    );
  }
  if (!isDeepStrictEqual(reparsed, expected)) {
    throw new Error(`internal error editing ${dotted(path)}: result does not parse to the expected config`);
  }
  return result;
}

/** Converts a value to plain JSON5 data with JSON's rules (toJSON, undefined members dropped, holes → null). */
function toPlain(value: unknown, where: string, seen: Set<object>): Plain | undefined {
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    value = (value as { toJSON: () => unknown }).toJSON();
  }
  if (
    value === null ||
    typeof value === 'boolean' ||
    typeof value === 'number' ||
    typeof value === 'string'
  ) {
    return value;
  }
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (typeof value === 'bigint') throw new Error(`cannot write ${where}: bigint is not a JSON5 value`);
  const object = value as object;
  if (seen.has(object)) throw new Error(`cannot write ${where}: circular reference`);
  seen.add(object);
  let out: Plain;
  if (Array.isArray(object)) {
    out = object.map((item, i) => toPlain(item, `${where}[${i}]`, seen) ?? null);
  } else {
    const record: { [key: string]: Plain } = {};
    for (const [key, member] of Object.entries(object)) {
      const plain = toPlain(member, `${where}.${key}`, seen);
      if (plain !== undefined) setOwn(record, key, plain);
    }
    out = record;
  }
  seen.delete(object);
  return out;
}

// ---------------------------------------------------------------------------
// Serializing new values
// ---------------------------------------------------------------------------

interface Style {
  eol: string; // the file's line ending
  unit: string; // one indentation step
  trailingComma: boolean; // whether multi-line containers end with a comma
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function formatKey(key: string): string {
  return IDENTIFIER.test(key) ? key : formatString(key);
}

/** Double-quoted; U+2028/2029 escaped because json5 warns about them raw. */
function formatString(value: string): string {
  return JSON.stringify(value)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  if (Object.is(value, -0)) return '-0';
  return String(value);
}

/**
 * Formats `value` starting at a line indented by `indent`. Objects are written
 * one member per line (or on one line when `inline`); arrays of scalars always
 * on one line.
 */
function formatValue(value: Plain, indent: string, style: Style, inline: boolean): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return formatString(value);
  if (typeof value === 'number') return formatNumber(value);
  if (typeof value === 'boolean') return String(value);
  const inner = indent + style.unit;
  const parts = Array.isArray(value)
    ? value.map((item) => formatValue(item, inner, style, inline))
    : Object.entries(value).map(
        ([key, member]) => `${formatKey(key)}: ${formatValue(member, inner, style, inline)}`,
      );
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (parts.length === 0) return `${open}${close}`;
  const scalarArray =
    Array.isArray(value) && value.every((item) => item === null || typeof item !== 'object');
  if (scalarArray) return `[${parts.join(', ')}]`;
  if (inline) return `${open} ${parts.join(', ')} ${close}`;
  const lines = parts.map(
    (part, i) => `${inner}${part}${i < parts.length - 1 || style.trailingComma ? ',' : ''}`,
  );
  return `${open}${style.eol}${lines.join(style.eol)}${style.eol}${indent}${close}`;
}

// ---------------------------------------------------------------------------
// The scanner: source spans of every member
// ---------------------------------------------------------------------------

interface ScalarNode {
  kind: 'scalar';
  start: number;
  end: number; // exclusive
}
interface ContainerNode {
  kind: 'object' | 'array';
  start: number; // the `{` or `[`
  end: number; // just after the `}` or `]`
  entries: Entry[];
}
type SourceNode = ScalarNode | ContainerNode;
interface Entry {
  start: number; // the key (objects) or the value (arrays)
  key: string | undefined; // decoded key; undefined for array items
  value: SourceNode;
  comma: number | undefined; // index of the comma after the value, if any
}

/** One text edit: replace [start, end) by `text` (start === end inserts). */
interface Edit {
  start: number;
  end: number;
  text: string;
}

function applyEdits(text: string, edits: Edit[]): string {
  // Right to left so earlier offsets stay valid; at equal offsets, later edits go first
  // so the text of the earlier one ends up in front.
  const ordered = edits
    .map((edit, i) => ({ edit, i }))
    .sort((a, b) => b.edit.start - a.edit.start || b.i - a.i);
  let out = text;
  for (const { edit } of ordered) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return out;
}

/** A single-character JSON5 whitespace test (JS `\s` covers JSON5's set, BOM included). */
function isSpace(ch: string | undefined): boolean {
  return ch !== undefined && /\s/.test(ch);
}

const SIMPLE_ESCAPES: Record<string, string> = {
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  0: '\0',
};

/** Recursive-descent scanner; the text was already accepted by JSON5.parse, so errors here are defensive. */
class Scanner {
  pos = 0;
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new Error(`config scanner: ${what} at offset ${this.pos}`);
  }

  /** Skips whitespace and both kinds of comment. */
  skipTrivia(): void {
    const t = this.text;
    while (this.pos < t.length) {
      if (isSpace(t[this.pos])) this.pos++;
      else if (t.startsWith('//', this.pos)) {
        while (this.pos < t.length && !'\n\r\u2028\u2029'.includes(t[this.pos] as string)) this.pos++;
      } else if (t.startsWith('/*', this.pos)) {
        const close = t.indexOf('*/', this.pos + 2);
        if (close < 0) this.fail('unterminated comment');
        this.pos = close + 2;
      } else break;
    }
  }

  value(): SourceNode {
    const ch = this.text[this.pos];
    if (ch === '{' || ch === '[') return this.container(ch === '{' ? 'object' : 'array');
    const start = this.pos;
    if (ch === '"' || ch === "'") this.string();
    else {
      // Numbers, true/false/null, Infinity, NaN: up to the next delimiter.
      while (this.pos < this.text.length && !/[\s,\]}:/]/.test(this.text[this.pos] as string)) this.pos++;
      if (this.pos === start) this.fail('value expected');
    }
    return { kind: 'scalar', start, end: this.pos };
  }

  /** Skips a quoted string (either quote) and returns its decoded content. */
  string(): string {
    const t = this.text;
    const quote = t[this.pos];
    let out = '';
    this.pos++;
    while (this.pos < t.length) {
      const ch = t[this.pos++] as string;
      if (ch === quote) return out;
      if (ch !== '\\') {
        out += ch;
        continue;
      }
      const esc = t[this.pos++] as string;
      if (esc in SIMPLE_ESCAPES) out += SIMPLE_ESCAPES[esc];
      else if (esc === 'x' || esc === 'u') {
        const digits = esc === 'x' ? 2 : 4;
        out += String.fromCharCode(Number.parseInt(t.slice(this.pos, this.pos + digits), 16));
        this.pos += digits;
      } else if (esc === '\r') {
        if (t[this.pos] === '\n') this.pos++; // line continuation
      } else if (!'\n\u2028\u2029'.includes(esc)) out += esc;
    }
    this.fail('unterminated string');
  }

  key(): string {
    const ch = this.text[this.pos];
    if (ch === '"' || ch === "'") return this.string();
    const start = this.pos;
    while (this.pos < this.text.length && !/[\s:/]/.test(this.text[this.pos] as string)) this.pos++;
    if (this.pos === start) this.fail('key expected');
    return this.text
      .slice(start, this.pos)
      .replace(/\\u([0-9a-fA-F]{4})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  }

  container(kind: 'object' | 'array'): ContainerNode {
    const node: ContainerNode = { kind, start: this.pos, end: -1, entries: [] };
    const close = kind === 'object' ? '}' : ']';
    this.pos++;
    for (;;) {
      this.skipTrivia();
      if (this.text[this.pos] === close) break;
      const start = this.pos;
      let key: string | undefined;
      if (kind === 'object') {
        key = this.key();
        this.skipTrivia();
        if (this.text[this.pos] !== ':') this.fail('":" expected');
        this.pos++;
        this.skipTrivia();
      }
      const entry: Entry = { start, key, value: this.value(), comma: undefined };
      node.entries.push(entry);
      this.skipTrivia();
      if (this.text[this.pos] === ',') entry.comma = this.pos++;
      else if (this.text[this.pos] !== close) this.fail(`"," or "${close}" expected`);
    }
    node.end = ++this.pos;
    return node;
  }
}

// ---------------------------------------------------------------------------
// The document: locating spans and planning edits
// ---------------------------------------------------------------------------

class ConfigDocument {
  readonly root: ContainerNode;
  readonly style: Style;

  constructor(readonly text: string) {
    const scanner = new Scanner(text);
    scanner.skipTrivia();
    const root = scanner.value();
    scanner.skipTrivia();
    if (scanner.pos !== text.length) scanner.fail('end of file expected');
    if (root.kind !== 'object') throw new Error('config is not editable: its top level must be an object');
    this.root = root;
    const newline = text.indexOf('\n');
    this.style = {
      eol: newline > 0 && text[newline - 1] === '\r' ? '\r\n' : '\n',
      unit: this.inferUnit(root) ?? '  ',
      trailingComma: this.inferTrailingComma(root) ?? true,
    };
  }

  // --- line helpers ---

  lineStart(pos: number): number {
    return this.text.lastIndexOf('\n', pos - 1) + 1;
  }
  /** Leading spaces/tabs of the line holding `pos`. */
  indentOf(pos: number): string {
    return /^[ \t]*/.exec(this.text.slice(this.lineStart(pos)))?.[0] ?? '';
  }
  /** True when only spaces/tabs precede `pos` on its line. */
  firstOnLine(pos: number): boolean {
    return /^[ \t]*$/.test(this.text.slice(this.lineStart(pos), pos));
  }
  /** A container is laid out over lines when its closing bracket starts a line. */
  multiline(node: ContainerNode): boolean {
    return this.firstOnLine(node.end - 1);
  }
  /** From `pos`, skips spaces and comments that end on the same line; returns the new offset. */
  restOfLine(pos: number): number {
    const t = this.text;
    for (;;) {
      while (t[pos] === ' ' || t[pos] === '\t') pos++;
      if (t.startsWith('//', pos)) {
        while (pos < t.length && t[pos] !== '\n' && t[pos] !== '\r') pos++;
      } else if (t.startsWith('/*', pos)) {
        const close = t.indexOf('*/', pos + 2);
        if (t.slice(pos, close).includes('\n')) return pos;
        pos = close + 2;
      } else return pos;
    }
  }

  // --- style inference ---

  *containers(node: SourceNode): Generator<ContainerNode> {
    if (node.kind === 'scalar') return;
    yield node;
    for (const entry of node.entries) yield* this.containers(entry.value);
  }
  /** The indentation step of a multi-line container: member indent minus closing-bracket indent. */
  unitOf(node: ContainerNode): string | undefined {
    const last = node.entries.at(-1);
    if (!last || !this.multiline(node)) return undefined;
    const member = this.indentOf(last.start);
    const close = this.indentOf(node.end - 1);
    return member.startsWith(close) && member.length > close.length ? member.slice(close.length) : undefined;
  }
  inferUnit(root: ContainerNode): string | undefined {
    for (const node of this.containers(root)) {
      const unit = this.unitOf(node);
      if (unit !== undefined) return unit;
    }
    return undefined;
  }
  /** Whether the file's multi-line containers end with a comma (undefined: no evidence). */
  inferTrailingComma(root: ContainerNode): boolean | undefined {
    let seen: boolean | undefined;
    for (const node of this.containers(root)) {
      const last = node.entries.at(-1);
      if (!last || !this.multiline(node)) continue;
      if (last.comma !== undefined) return true;
      seen = false;
    }
    return seen;
  }

  // --- locating ---

  /** The last member named `key` (JSON5.parse keeps the last of duplicates). */
  member(node: ContainerNode, key: string): Entry | undefined {
    return node.entries.findLast((entry) => entry.key === key);
  }

  // --- planning edits ---

  /** Edits that set `path` to `value`, creating missing parent objects. */
  setEdits(path: string[], value: Plain): Edit[] {
    let node = this.root;
    for (let depth = 0; depth < path.length; depth++) {
      const key = path[depth] as string;
      const entry: Entry | undefined = this.member(node, key);
      if (!entry) {
        // Missing from here on: insert `key: { rest: ... value }` as the last member.
        const nested = path.slice(depth + 1).reduceRight<Plain>((inner, k) => {
          const wrapper: { [key: string]: Plain } = {};
          setOwn(wrapper, k, inner);
          return wrapper;
        }, value);
        return this.insertEdits(
          node,
          (indent, inline) => `${formatKey(key)}: ${this.format(nested, indent, inline)}`,
        );
      }
      if (depth === path.length - 1) {
        // Present: replace exactly the value span.
        const indent = this.indentOf(entry.start);
        const inline = !this.multiline(node);
        return [{ start: entry.value.start, end: entry.value.end, text: this.format(value, indent, inline) }];
      }
      if (entry.value.kind !== 'object') {
        throw new Error(`cannot set ${dotted(path)}: ${dotted(path.slice(0, depth + 1))} is not an object`);
      }
      node = entry.value;
    }
    throw new Error('unreachable');
  }

  /** Edits that append `item` to the existing array at `path`. */
  appendEdits(path: string[], item: string): Edit[] {
    let node: SourceNode = this.root;
    for (const key of path) {
      const entry: Entry | undefined = node.kind === 'object' ? this.member(node, key) : undefined;
      if (!entry) throw new Error(`cannot add to ${dotted(path)}: not found`);
      node = entry.value;
    }
    if (node.kind !== 'array') throw new Error(`cannot add to ${dotted(path)}: it is not an array`);
    return this.insertEdits(node, () => formatString(item));
  }

  format(value: Plain, indent: string, inline: boolean): string {
    return formatValue(value, indent, this.style, inline);
  }

  /**
   * Edits that add one entry as the last entry of `node`. `render(indent, inline)`
   * returns the entry's text (`key: value` or a bare item) for a line indented by
   * `indent`, or for use inside a one-line container when `inline`.
   */
  insertEdits(node: ContainerNode, render: (indent: string, inline: boolean) => string): Edit[] {
    const { eol, unit } = this.style;
    const close = node.end - 1;
    const last = node.entries.at(-1);

    if (!last) {
      const inner = this.text.slice(node.start + 1, close);
      if (/^\s*$/.test(inner)) {
        // Only whitespace inside: `[]` → `[item]`; `{}` → one member per line.
        if (node.kind === 'array') return [{ start: node.start + 1, end: close, text: render('', true) }];
        const indent = this.indentOf(node.start);
        const comma = this.style.trailingComma ? ',' : '';
        const text = `${eol}${indent}${unit}${render(indent + unit, false)}${comma}${eol}${indent}`;
        return [{ start: node.start + 1, end: close, text }];
      }
      // Comments inside: keep them, add the entry just before the closing bracket.
      if (this.firstOnLine(close)) {
        const indent = this.indentOf(close) + unit;
        const comma = this.style.trailingComma ? ',' : '';
        const at = this.lineStart(close);
        return [{ start: at, end: at, text: `${indent}${render(indent, false)}${comma}${eol}` }];
      }
      const spaced = isSpace(this.text[close - 1]) ? ' ' : '';
      return [{ start: close, end: close, text: `${render(this.indentOf(close), true)}${spaced}` }];
    }

    const hadComma = last.comma !== undefined;
    const afterLast = hadComma ? (last.comma as number) + 1 : last.value.end;
    const edits: Edit[] = hadComma ? [] : [{ start: last.value.end, end: last.value.end, text: ',' }];

    if (!this.multiline(node)) {
      // `{ a: 1 }` / `["a",]`: stay on one line, keep the trailing-comma habit.
      const entry = render(this.indentOf(node.start), true);
      edits.push({ start: afterLast, end: afterLast, text: hadComma ? ` ${entry},` : ` ${entry}` });
      return edits;
    }

    // Multi-line: a new line after the last entry's line (after its comma and any trailing comment),
    // indented like the last entry; trailing comma only if the last entry had one.
    const indent = this.indentOf(last.start);
    const entry = `${indent}${render(indent, false)}${hadComma ? ',' : ''}`;
    const end = this.restOfLine(afterLast);
    const newline = this.text.startsWith('\r\n', end) ? 2 : this.text[end] === '\n' ? 1 : 0;
    if (newline > 0) edits.push({ start: end + newline, end: end + newline, text: `${entry}${eol}` });
    else edits.push({ start: afterLast, end: afterLast, text: `${eol}${entry}` }); // a multi-line comment follows
    return edits;
  }
}
