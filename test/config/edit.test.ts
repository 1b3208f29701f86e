// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config files hold literal ${ENV} references
/**
 * `src/config/edit.ts`: surgical JSON5 edits for `agentgate hooks gmail setup`
 * (docs/design-decisions.md). Every test checks that the bytes outside the
 * edited span are unchanged and that the result parses to the expected
 * document.
 */
import {
  chmodSync,
  lstatSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import JSON5 from 'json5';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addToConfigArray, getConfigValue, setConfigValue, writeConfigFile } from '../../src/config/edit.js';
import { tempDir } from '../helpers/gateway.js';

/** A hand-edited config: comments everywhere, odd strings, both quote kinds, trailing commas. */
const CONFIG = `// agentgate configuration — edited by hand
/* block comment with { braces } and "quotes" and 'single' and // slashes */
{
  // gateway first
  gateway: {
    bind: '127.0.0.1', port: 18790, // two members on one line
    auth: { token: "\${AGENTGATE_GATEWAY_TOKEN}" }, /* admin } API { " */
    trustedProxies: [],
  },
  "store": { driver: "sqlite", 'path': "{config_dir}/state/agentgate.db" },
  //     { driver: "postgres", url: "postgres://..." }
  'hooks': {
    enabled: true,
    token: "\${AGENTGATE_HOOK_TOKEN}", // send as "Authorization: Bearer <token>"
    path: '/hooks', /* "quoted", {brace} */
    weird: "a } b , c // d /* e */ \\" f ' g",
    escaped: 'it\\'s a \\'single\\' string with "double" and \${ENV} inside',
    maxBodyBytes: 0x40000,
    ratio: +.5,
    limits: [Infinity, -Infinity, NaN, 1e3,],
    mappings: [
      { match: { path: "gmail" }, action: "agent", }, // trailing comma in object
    ],
  },
  models: { providers: { echo: { api: "echo" } } },
  agents: {
    list: [{ id: "main", default: true }],
  },
  // a closing comment
}
// after the document
`;

const GMAIL = {
  account: 'me@example.com',
  label: 'INBOX',
  pushToken: 'tok-${NOT_AN_ENV}',
  serve: { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' },
  credentialsFile: '{config_dir}/credentials/gmail.json',
};

/** The lines `setConfigValue` writes for GMAIL at a 4-space member indent. */
const GMAIL_TEXT = [
  '    gmail: {',
  '      account: "me@example.com",',
  '      label: "INBOX",',
  '      pushToken: "tok-${NOT_AN_ENV}",',
  '      serve: {',
  '        bind: "127.0.0.1",',
  '        port: 8788,',
  '        path: "/gmail-pubsub",',
  '      },',
  '      credentialsFile: "{config_dir}/credentials/gmail.json",',
  '    },',
  '',
].join('\n');

const crlf = (text: string) => text.replace(/\n/g, '\r\n');

/** Asserts `after` is `before` with `inserted` put at offset `at` and nothing else changed. */
function expectInsertedAt(before: string, after: string, at: number, inserted: string) {
  expect(after.slice(0, at)).toBe(before.slice(0, at));
  expect(after.slice(at + inserted.length)).toBe(before.slice(at));
  expect(after.slice(at, at + inserted.length)).toBe(inserted);
}

/** Offset just after the line holding `anchor` (its newline included). */
function afterLineOf(text: string, anchor: string): number {
  const found = text.indexOf(anchor);
  expect(found).toBeGreaterThanOrEqual(0);
  return text.indexOf('\n', found) + 1;
}

/** The parsed document with `value` placed at `path`. */
function expectedDoc(text: string, path: string[], value: unknown): unknown {
  const doc = JSON5.parse(text);
  let node = doc;
  for (const key of path.slice(0, -1)) {
    node[key] ??= {};
    node = node[key];
  }
  node[path[path.length - 1] as string] = value;
  return doc;
}

describe('setConfigValue', () => {
  it('adds hooks.gmail as the last member of an existing hooks, leaving every other byte alone', () => {
    const after = setConfigValue(CONFIG, ['hooks', 'gmail'], GMAIL);
    // Right after the last member (`mappings: [...],`), before hooks' closing brace.
    expectInsertedAt(CONFIG, after, afterLineOf(CONFIG, '    ],'), GMAIL_TEXT);
    expect(JSON5.parse(after)).toEqual(expectedDoc(CONFIG, ['hooks', 'gmail'], GMAIL));
    expect(getConfigValue(after, ['hooks', 'gmail'])).toEqual(GMAIL);
    expect(getConfigValue(after, ['hooks', 'token'])).toBe('${AGENTGATE_HOOK_TOKEN}');
  });

  it('keeps CRLF line endings and writes the new lines with CRLF', () => {
    const before = crlf(CONFIG);
    const after = setConfigValue(before, ['hooks', 'gmail'], GMAIL);
    expectInsertedAt(before, after, afterLineOf(before, '    ],'), crlf(GMAIL_TEXT));
    expect(after.replace(/\r\n/g, '')).not.toContain('\n');
    expect(JSON5.parse(after)).toEqual(expectedDoc(before, ['hooks', 'gmail'], GMAIL));
  });

  it('creates hooks (and its gmail member) at the top level when hooks is absent', () => {
    const hooksStart = CONFIG.indexOf("  'hooks': {");
    const hooksEnd = afterLineOf(CONFIG, '    ],') + '  },\n'.length;
    const noHooks = CONFIG.slice(0, hooksStart) + CONFIG.slice(hooksEnd);
    expect(getConfigValue(noHooks, ['hooks'])).toBeUndefined();

    const after = setConfigValue(noHooks, ['hooks', 'gmail'], { account: 'me@example.com' });
    const inserted = '  hooks: {\n    gmail: {\n      account: "me@example.com",\n    },\n  },\n';
    expectInsertedAt(noHooks, after, afterLineOf(noHooks, '  },\n  // a closing comment'), inserted);
    expect(JSON5.parse(after)).toEqual(
      expectedDoc(noHooks, ['hooks', 'gmail'], { account: 'me@example.com' }),
    );
  });

  it('replaces exactly the value span of an existing hooks.gmail', () => {
    const withGmail = setConfigValue(CONFIG, ['hooks', 'gmail'], GMAIL);
    // Put a comment after the member: it must survive the replacement.
    const commented = withGmail.replace(
      '      credentialsFile: "{config_dir}/credentials/gmail.json",\n    },',
      '$& // set up 2024',
    );
    expect(commented).not.toBe(withGmail);

    const current = getConfigValue(commented, ['hooks', 'gmail']) as typeof GMAIL;
    const next = { ...current, account: 'other@example.com', includeBody: false }; // keeps pushToken
    const after = setConfigValue(commented, ['hooks', 'gmail'], next);

    const valueStart = commented.indexOf('gmail: {') + 'gmail: '.length;
    const valueEnd = commented.indexOf('    }, // set up 2024') + '    }'.length;
    expect(after.slice(0, valueStart)).toBe(commented.slice(0, valueStart));
    expect(after.endsWith(commented.slice(valueEnd))).toBe(true);
    expect(after).toContain('    }, // set up 2024\n');
    expect(getConfigValue(after, ['hooks', 'gmail'])).toEqual(next);
    expect(JSON5.parse(after)).toEqual(expectedDoc(commented, ['hooks', 'gmail'], next));
  });

  it('replaces a scalar in place, even in a one-line object', () => {
    expect(setConfigValue(CONFIG, ['gateway', 'port'], 18791)).toBe(
      CONFIG.replace('port: 18790', 'port: 18791'),
    );
    expect(setConfigValue(CONFIG, ['store', 'path'], '/var/lib/agentgate.db')).toBe(
      CONFIG.replace('"{config_dir}/state/agentgate.db"', '"/var/lib/agentgate.db"'),
    );
    expect(setConfigValue(CONFIG, ['hooks', 'limits'], [])).toBe(
      CONFIG.replace('[Infinity, -Infinity, NaN, 1e3,]', '[]'),
    );
  });

  it('adds a comma to a last member that has none, before its trailing comment', () => {
    const before = '{\n  a: 1, // one\n  b: "x" // note, with a comma\n}\n';
    const after = setConfigValue(before, ['c'], true);
    expect(after).toBe('{\n  a: 1, // one\n  b: "x", // note, with a comma\n  c: true\n}\n');
  });

  it('writes into one-line objects on one line', () => {
    expect(setConfigValue('{ hooks: { enabled: true } }', ['hooks', 'gmail'], { a: 1, b: [1, 'x'] })).toBe(
      '{ hooks: { enabled: true, gmail: { a: 1, b: [1, "x"] } } }',
    );
    expect(setConfigValue('{ hooks: { enabled: true, }, }', ['hooks', 'x'], 1)).toBe(
      '{ hooks: { enabled: true, x: 1, }, }',
    );
  });

  it('fills empty objects, with or without comments inside', () => {
    expect(setConfigValue('{\n  hooks: {},\n}\n', ['hooks', 'gmail'], { a: 1 })).toBe(
      '{\n  hooks: {\n    gmail: {\n      a: 1,\n    },\n  },\n}\n',
    );
    expect(setConfigValue('{}', ['hooks', 'x'], 'y')).toBe('{\n  hooks: {\n    x: "y",\n  },\n}');
    expect(setConfigValue('{\n  hooks: {\n    // nothing yet\n  },\n}\n', ['hooks', 'x'], 1)).toBe(
      '{\n  hooks: {\n    // nothing yet\n    x: 1,\n  },\n}\n',
    );
    expect(setConfigValue('{ hooks: { /* none */ } }', ['hooks', 'x'], 1)).toBe(
      '{ hooks: { /* none */ x: 1 } }',
    );
  });

  it('follows the file: tab indentation, no trailing commas', () => {
    const before = '{\n\tgateway: {\n\t\tport: 1\n\t}\n}\n';
    expect(setConfigValue(before, ['hooks', 'gmail'], { a: { b: 1 } })).toBe(
      '{\n\tgateway: {\n\t\tport: 1\n\t},\n\thooks: {\n\t\tgmail: {\n\t\t\ta: {\n\t\t\t\tb: 1\n\t\t\t}\n\t\t}\n\t}\n}\n',
    );
  });

  it('quotes keys that are not identifiers and round-trips awkward values', () => {
    const value = {
      'a-b': 1,
      'with space': 'x',
      $ok: 'line\nbreak "quoted" \'single\' \\ } , // ${ENV}',
      sep: '\u2028\u2029',
      numbers: [0, -0, 1.5e300, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY],
      nested: [{ x: null }, [], {}],
      dropped: undefined,
      when: new Date(0),
    };
    const after = setConfigValue(CONFIG, ['hooks', 'gmail'], value);
    expect(after).toContain('"a-b": 1,');
    expect(after).toContain('$ok: "line\\nbreak');
    const read = getConfigValue(after, ['hooks', 'gmail']) as Record<string, unknown>;
    const { dropped: _dropped, ...kept } = value;
    expect(read).toStrictEqual({ ...kept, when: '1970-01-01T00:00:00.000Z' });
    expect(Object.is((read.numbers as number[])[1], -0)).toBe(true);
  });

  it('finds quoted keys and edits the last of duplicate keys (the one JSON5 keeps)', () => {
    const before = '{\n  \'hooks\': { a: 1 },\n  "hooks": {\n    b: 2,\n  },\n}\n';
    const after = setConfigValue(before, ['hooks', 'c'], 3);
    expect(after).toBe('{\n  \'hooks\': { a: 1 },\n  "hooks": {\n    b: 2,\n    c: 3,\n  },\n}\n');
    expect(getConfigValue(after, ['hooks'])).toEqual({ b: 2, c: 3 });
  });

  it('refuses clearly: invalid JSON5, a non-object top level, a non-object parent, an empty path', () => {
    expect(() => setConfigValue('{ hooks: { ', ['hooks', 'x'], 1)).toThrow(/not valid JSON5/);
    expect(() => setConfigValue('[1, 2]', ['hooks'], 1)).toThrow(/top level must be an object/);
    expect(() => setConfigValue('// nothing\n', ['hooks'], 1)).toThrow(/not valid JSON5/);
    expect(() => setConfigValue('{ hooks: "off" }', ['hooks', 'gmail'], {})).toThrow(
      'cannot set hooks.gmail: hooks is not an object',
    );
    expect(() => setConfigValue('{}', [], 1)).toThrow(/must not be empty/);
    expect(() => setConfigValue('{}', ['x'], undefined)).toThrow(/undefined/);
    expect(() => setConfigValue('{}', ['x'], 10n)).toThrow(/bigint/);
  });
});

describe('addToConfigArray', () => {
  const withPresets = (presets: string) =>
    CONFIG.replace("    path: '/hooks',", `    presets: ${presets},\n$&`);

  it('appends to a non-empty array, keeping its trailing comma', () => {
    const before = withPresets('["other",]');
    const after = addToConfigArray(before, ['hooks', 'presets'], 'gmail');
    expectInsertedAt(before, after, before.indexOf('["other",]') + '["other",'.length, ' "gmail",');
    expect(getConfigValue(after, ['hooks', 'presets'])).toEqual(['other', 'gmail']);
    expect(JSON5.parse(after)).toEqual(expectedDoc(before, ['hooks', 'presets'], ['other', 'gmail']));
  });

  it('appends to an array without trailing comma and to a multi-line array', () => {
    expect(addToConfigArray("{ hooks: { presets: ['a'] } }", ['hooks', 'presets'], 'gmail')).toBe(
      '{ hooks: { presets: [\'a\', "gmail"] } }',
    );
    const multi = '{\r\n  presets: [\r\n    "a", // first\r\n  ],\r\n}\r\n';
    expect(addToConfigArray(multi, ['presets'], 'gmail')).toBe(
      '{\r\n  presets: [\r\n    "a", // first\r\n    "gmail",\r\n  ],\r\n}\r\n',
    );
  });

  it('fills an empty array', () => {
    const before = withPresets('[]');
    const after = addToConfigArray(before, ['hooks', 'presets'], 'gmail');
    expectInsertedAt(before, after, before.indexOf('presets: [') + 'presets: ['.length, '"gmail"');
    expect(addToConfigArray('{ p: [ /* none */ ] }', ['p'], 'x')).toBe('{ p: [ /* none */ "x" ] }');
  });

  it('creates the array when absent, and its parents', () => {
    const after = addToConfigArray(CONFIG, ['hooks', 'presets'], 'gmail');
    expectInsertedAt(CONFIG, after, afterLineOf(CONFIG, '    ],'), '    presets: ["gmail"],\n');
    expect(addToConfigArray('{\n  a: 1,\n}\n', ['hooks', 'presets'], 'gmail')).toBe(
      '{\n  a: 1,\n  hooks: {\n    presets: ["gmail"],\n  },\n}\n',
    );
  });

  it('leaves the text identical when the item is already there', () => {
    const before = withPresets("[ 'gmail', ]");
    expect(addToConfigArray(before, ['hooks', 'presets'], 'gmail')).toBe(before);
  });

  it('refuses a non-array and invalid JSON5', () => {
    expect(() => addToConfigArray(withPresets('"gmail"'), ['hooks', 'presets'], 'gmail')).toThrow(
      'cannot add to hooks.presets: it is not an array',
    );
    expect(() => addToConfigArray('{ hooks: [ }', ['hooks', 'presets'], 'gmail')).toThrow(/not valid JSON5/);
  });
});

describe('getConfigValue', () => {
  it('reads values by path, literally (no ${ENV} substitution)', () => {
    expect(getConfigValue(CONFIG, ['gateway', 'auth', 'token'])).toBe('${AGENTGATE_GATEWAY_TOKEN}');
    expect(getConfigValue(CONFIG, ['hooks', 'weird'])).toBe('a } b , c // d /* e */ " f \' g');
    expect(getConfigValue(CONFIG, ['hooks', 'maxBodyBytes'])).toBe(0x40000);
    expect(getConfigValue(CONFIG, ['store'])).toEqual({
      driver: 'sqlite',
      path: '{config_dir}/state/agentgate.db',
    });
    expect(getConfigValue(CONFIG, ['hooks', 'gmail'])).toBeUndefined();
    expect(getConfigValue(CONFIG, ['hooks', 'token', 'length'])).toBeUndefined();
    expect(getConfigValue(CONFIG, ['hooks', 'mappings', '0'])).toBeUndefined();
    expect(() => getConfigValue('{', ['a'])).toThrow(/not valid JSON5/);
  });
});

describe('writeConfigFile', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('agentgate-edit-');
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('replaces the file atomically with mode 0600 and leaves no temp file', () => {
    const path = join(dir, 'agentgate.json5');
    writeFileSync(path, CONFIG);
    chmodSync(path, 0o644);
    const next = setConfigValue(readFileSync(path, 'utf8'), ['hooks', 'gmail'], GMAIL);
    writeConfigFile(path, next);
    expect(readFileSync(path, 'utf8')).toBe(next);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['agentgate.json5']);

    const fresh = join(dir, 'new.json5');
    writeConfigFile(fresh, '{}\n');
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(['agentgate.json5', 'new.json5']);
  });

  it('writes through a symlink to its target', () => {
    const target = join(dir, 'real.json5');
    const link = join(dir, 'agentgate.json5');
    writeFileSync(target, '{}\n');
    symlinkSync(target, link);
    writeConfigFile(link, '{ a: 1 }\n');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('{ a: 1 }\n');
  });

  it('an invalid config file: clear error, nothing written', () => {
    const path = join(dir, 'agentgate.json5');
    const broken = '{ hooks: { enabled: true, }\n'; // missing closing brace
    writeFileSync(path, broken, { mode: 0o600 });
    const edit = () =>
      writeConfigFile(path, setConfigValue(readFileSync(path, 'utf8'), ['hooks', 'gmail'], {}));
    expect(edit).toThrow(/config is not valid JSON5/);
    expect(() => writeConfigFile(path, broken)).toThrow(/config is not valid JSON5/);
    expect(readFileSync(path, 'utf8')).toBe(broken);
    expect(readdirSync(dir)).toEqual(['agentgate.json5']);
  });
});
