// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the tests write transform sources that contain template literals
/**
 * Mapping transforms (docs/mappings.md, "Transforms"; docs/transforms.md): loading JS and TS
 * modules from a real temp transforms root into their worker threads, export
 * selection, result validation, time limits, and every way a module path could
 * escape the transforms directory. Runaways and crashes: transform-isolation.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  loadTransform,
  TRANSFORM_TIMEOUT_MS,
  TransformError,
  type TransformInput,
  type TransformLimits,
  type TransformPool,
  TransformTimeoutError,
} from '../../src/mappings/transforms.js';

let base: string;
/** {base}/hooks/transforms — the transforms root; `dir` is the configured transforms dir inside it. */
let root: string;
let dir: string;
/** A sibling of the root: anything here is out of bounds. */
let outside: string;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'agentgate-transforms-'));
  root = join(base, 'hooks', 'transforms');
  dir = join(root, 'mine');
  outside = join(base, 'outside');
  mkdirSync(dir, { recursive: true });
  mkdirSync(outside);
});
/** Every pool a test started; each is terminated after the test, so no worker outlives it. */
const pools: TransformPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.terminate()));
  rmSync(base, { recursive: true, force: true });
});

const input: TransformInput = {
  payload: { n: 7, title: 'Hi' },
  headers: { 'x-event': 'push' },
  query: { q: '1' },
  path: 'github',
  url: '/hooks/github?q=1',
};

function write(name: string, source: string, at = dir): string {
  const file = join(at, name);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, source);
  return file;
}

async function load(module: string, exportName?: string, limits: Partial<TransformLimits> = {}) {
  const pool = await loadTransform(
    { transformsRoot: root, transformsDir: dir, module, ...(exportName ? { exportName } : {}) },
    limits,
  );
  pools.push(pool);
  return pool;
}

async function loadAndRun(module: string, exportName?: string) {
  return (await load(module, exportName)).run(input);
}

let sources = 0;
/** Writes `source` as a fresh .mjs transform and runs it once on `input`. */
async function run(source: string, limits: Partial<TransformLimits> = { timeoutMs: 1000 }) {
  const name = `inline-${++sources}.mjs`;
  write(name, source);
  return (await load(name, undefined, limits)).run(input);
}

describe('loadTransform: module kinds and exports', () => {
  it('loads an .mjs default export and passes the whole input', async () => {
    write(
      'echo.mjs',
      'export default (i) => ({ message: `${i.path} ${i.url} ${i.headers["x-event"]} ${i.query.q} ${i.payload.n}` });',
    );
    expect(await loadAndRun('echo.mjs')).toEqual({ message: 'github /hooks/github?q=1 push 1 7' });
  });

  it('loads a real TypeScript file with type annotations', async () => {
    write(
      'typed.ts',
      [
        'interface Input { payload: { n: number; title: string } }',
        'type Out = { kind: "agent" | "wake"; message: string; timeoutSeconds: number };',
        'export default function (input: Input): Out {',
        '  const n: number = input.payload.n * 2;',
        '  return { kind: "agent", message: `${input.payload.title} ${n}`, timeoutSeconds: n };',
        '}',
      ].join('\n'),
    );
    expect(await loadAndRun('typed.ts')).toEqual({ kind: 'agent', message: 'Hi 14', timeoutSeconds: 14 });
  });

  it('loads an .mts file with a named `transform` export', async () => {
    write(
      'named.mts',
      'export const transform = async (i: { payload: { n: number } }) => ({ text: `n=${i.payload.n}` });',
    );
    expect(await loadAndRun('named.mts')).toEqual({ text: 'n=7' });
  });

  it('loads a .cjs module.exports object', async () => {
    write('common.cjs', 'module.exports = { transform: (i) => ({ text: "cjs " + i.payload.n }) };');
    expect(await loadAndRun('common.cjs')).toEqual({ text: 'cjs 7' });
  });

  it('loads modules in subfolders of the transforms dir', async () => {
    write('sub/deep.mjs', 'export default () => ({ name: "deep" });');
    expect(await loadAndRun('sub/deep.mjs')).toEqual({ name: 'deep' });
  });

  it('uses exportName when given', async () => {
    write('multi.mjs', 'export default () => ({ text: "d" });\nexport const other = () => ({ text: "o" });');
    expect(await loadAndRun('multi.mjs', 'other')).toEqual({ text: 'o' });
    expect(await loadAndRun('multi.mjs', 'default')).toEqual({ text: 'd' });
  });

  it('prefers default, and falls back to `transform`', async () => {
    write(
      'both.mjs',
      'export default () => ({ text: "d" });\nexport const transform = () => ({ text: "t" });',
    );
    write('only.mjs', 'export const transform = () => ({ text: "t" });');
    expect(await loadAndRun('both.mjs')).toEqual({ text: 'd' });
    expect(await loadAndRun('only.mjs')).toEqual({ text: 't' });
  });

  it('refuses a missing or non-function export, naming it and the module', async () => {
    write('data.mjs', 'export const other = 42;\nexport default { not: "a function" };');
    await expect(load('data.mjs', 'other')).rejects.toThrow(/"data\.mjs".*export "other" is not a function/);
    await expect(load('data.mjs', 'nope')).rejects.toThrow(/export "nope" is missing/);
    await expect(load('data.mjs')).rejects.toThrow(
      /neither a default function nor a function named "transform"/,
    );
    await expect(load('data.mjs')).rejects.toBeInstanceOf(TransformError);
  });

  it('wraps a module that fails to load', async () => {
    write('broken.mjs', 'export default (;');
    write('throws.mjs', 'throw new Error("boom at load");');
    await expect(load('broken.mjs')).rejects.toThrow(/"broken\.mjs": failed to load/);
    await expect(load('throws.mjs')).rejects.toThrow(/"throws\.mjs": failed to load: boom at load/);
  });

  it('picks up an edited module on the next load (config reload)', async () => {
    for (const name of ['edit.mjs', 'edit.cjs', 'edit.ts']) {
      const source = (v: string) =>
        name.endsWith('.cjs')
          ? `module.exports = () => ({ text: "${v}" });`
          : `export default () => ({ text: "${v}" });`;
      write(name, source('v1'));
      expect(await loadAndRun(name), name).toEqual({ text: 'v1' });
      write(name, source('version2')); // a different size, so the change shows even within one mtime tick
      expect(await loadAndRun(name), name).toEqual({ text: 'version2' });
    }
  });

  it('refuses unsupported extensions', async () => {
    write('data.json', '{}');
    await expect(load('data.json')).rejects.toThrow(/unsupported extension "\.json"/);
  });
});

describe('loadTransform: containment', () => {
  it('refuses an absolute path, even to a real file inside the dir', async () => {
    const file = write('ok.mjs', 'export default () => null;');
    await expect(load(file)).rejects.toThrow(/must be a path relative/);
    await expect(load('C:\\x\\ok.mjs')).rejects.toThrow(/must be a path relative/);
  });

  it('refuses ".." segments, even when they would land back inside', async () => {
    write('ok.mjs', 'export default () => null;');
    write('x.js', 'export default () => null;', outside);
    await expect(load('../x.js')).rejects.toThrow(/must not contain "\.\."/);
    await expect(load('sub/../ok.mjs')).rejects.toThrow(/must not contain "\.\."/);
    await expect(load('..\\x.js')).rejects.toThrow(/must not contain "\.\."/);
  });

  it('refuses a symlink inside the dir that points outside', async () => {
    const target = write('evil.mjs', 'export default () => ({ text: "escaped" });', outside);
    symlinkSync(target, join(dir, 'link.mjs'));
    await expect(load('link.mjs')).rejects.toThrow(/through a symlink\) outside/);
  });

  it('refuses a symlinked folder inside the dir that points outside', async () => {
    write('evil.mjs', 'export default () => ({ text: "escaped" });', outside);
    symlinkSync(outside, join(dir, 'linked-dir'));
    await expect(load('linked-dir/evil.mjs')).rejects.toThrow(/through a symlink\) outside/);
  });

  it('accepts a symlink that stays inside the transforms dir', async () => {
    const target = write('real.mjs', 'export default () => ({ text: "inside" });');
    symlinkSync(target, join(dir, 'alias.mjs'));
    expect(await loadAndRun('alias.mjs')).toEqual({ text: 'inside' });
  });

  it('refuses a transforms dir outside the root', async () => {
    write('x.mjs', 'export default () => null;', outside);
    await expect(
      loadTransform({ transformsRoot: root, transformsDir: outside, module: 'x.mjs' }),
    ).rejects.toThrow(/transforms directory .* is outside the transforms root/);
  });

  it('refuses a transforms dir that is a symlink leading outside the root', async () => {
    write('x.mjs', 'export default () => null;', outside);
    symlinkSync(outside, join(root, 'sneaky'));
    await expect(
      loadTransform({ transformsRoot: root, transformsDir: join(root, 'sneaky'), module: 'x.mjs' }),
    ).rejects.toThrow(/through a symlink\) outside/);
  });

  it('refuses a missing file, and an empty module name', async () => {
    await expect(load('nope.mjs')).rejects.toThrow(/"nope\.mjs": file not found/);
    await expect(load('')).rejects.toBeInstanceOf(TransformError);
  });

  it('refuses a folder', async () => {
    mkdirSync(join(dir, 'folder.mjs'));
    await expect(load('folder.mjs')).rejects.toThrow(/not a file/);
  });
});

describe('running a transform in its worker', () => {
  it('exports the default time limit', () => {
    expect(TRANSFORM_TIMEOUT_MS).toBe(5000);
  });

  it('returns a sync result, keeping known fields and dropping unknown ones', async () => {
    const result = await run(`export default () => ({
      kind: 'wake', text: 't', message: 'm', name: 'n', sessionKey: 'hook:x', agentId: 'main',
      wakeMode: 'now', deliver: false, channel: 'slack', to: 'C1', model: 'openai/x', thinking: 'low',
      timeoutSeconds: 30, extra: 'ignored', message2: 1,
    });`);
    expect(result).toEqual({
      kind: 'wake',
      text: 't',
      message: 'm',
      name: 'n',
      sessionKey: 'hook:x',
      agentId: 'main',
      wakeMode: 'now',
      deliver: false,
      channel: 'slack',
      to: 'C1',
      model: 'openai/x',
      thinking: 'low',
      timeoutSeconds: 30,
    });
  });

  it('awaits an async result', async () => {
    expect(await run('export default async (i) => ({ message: String(i.payload.n) });')).toEqual({
      message: '7',
    });
  });

  it('maps null and undefined to null (skip)', async () => {
    expect(await run('export default () => null;')).toBeNull();
    expect(await run('export default async () => undefined;')).toBeNull();
  });

  it("propagates a thrown error's name, message and stack, sync or async", async () => {
    for (const source of [
      'export default () => { throw new RangeError("transform broke"); };',
      'export default async () => Promise.reject(new RangeError("transform broke"));',
    ]) {
      const error = await run(source).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(error).toMatchObject({ name: 'RangeError', message: 'transform broke' });
      expect(error?.stack).toMatch(/inline-\d+\.mjs/);
    }
    await expect(run('export default () => { throw "a string"; };')).rejects.toThrow(
      /threw a non-error value: a string/,
    );
  });

  it('cuts off a transform that never settles', async () => {
    const started = Date.now();
    await expect(
      run('export default () => new Promise(() => {});', { timeoutMs: 50 }),
    ).rejects.toBeInstanceOf(TransformTimeoutError);
    await expect(run('export default () => new Promise(() => {});', { timeoutMs: 20 })).rejects.toThrow(
      /did not finish within 20 ms; its worker was stopped/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('refuses results that are not plain objects', async () => {
    for (const bad of ['[]', '"text"', '42', 'true', 'new Date()', 'new (class Action {})()']) {
      await expect(run(`export default () => ${bad};`), bad).rejects.toBeInstanceOf(TransformError);
    }
    await expect(run('export default () => [];')).rejects.toThrow(/must be an object or null, got an array/);
    await expect(run('export default () => "hi";')).rejects.toThrow(/got a string "hi"/);
    await expect(run('export default () => new (class Action {})();')).rejects.toThrow(
      /plain object, got an instance of Action/,
    );
  });

  it('refuses functions and classes with a TransformError, not a clone error', async () => {
    await expect(run('export default () => () => ({ text: "x" });')).rejects.toThrow(
      /must be an object or null, got a function/,
    );
    await expect(run('export default () => class Action {};')).rejects.toThrow(/got a function/);
    await expect(run('export default () => ({ text: () => "x" });')).rejects.toThrow(
      /field "text" must be a string, got a function/,
    );
    // Unknown fields are dropped, so what they hold never has to cross back.
    expect(await run('export default () => ({ text: "x", helper: () => 1, sym: Symbol("s") });')).toEqual({
      text: 'x',
    });
  });

  it('accepts a null-prototype object', async () => {
    expect(await run('export default () => Object.assign(Object.create(null), { text: "x" });')).toEqual({
      text: 'x',
    });
  });

  it('refuses known fields of the wrong type, naming the field', async () => {
    const cases: [string, RegExp][] = [
      ['{ message: 42 }', /field "message" must be a string, got number 42/],
      ['{ to: null }', /field "to" must be a string, got null/],
      ['{ deliver: "yes" }', /field "deliver" must be a boolean/],
      ['{ timeoutSeconds: "30" }', /field "timeoutSeconds" must be a finite number/],
      ['{ timeoutSeconds: NaN }', /field "timeoutSeconds" must be a finite number/],
      ['{ kind: "shout" }', /field "kind" must be "agent" or "wake"/],
      ['{ channel: { id: 1 } }', /field "channel" must be a string, got an object/],
    ];
    for (const [result, message] of cases) {
      await expect(run(`export default () => (${result});`)).rejects.toThrow(message);
    }
  });

  it('refuses an object whose fields would be inherited from a custom prototype', async () => {
    await expect(run('export default () => Object.create({ message: "inherited" });')).rejects.toThrow(
      /plain object/,
    );
  });
});
