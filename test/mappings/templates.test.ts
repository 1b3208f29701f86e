/**
 * Mapping templates (docs/mappings.md, "Templates"): every placeholder form, rendering
 * rules, and the guarantee that untrusted payloads cannot reach the prototype
 * chain.
 */
import { describe, expect, it } from 'vitest';
import {
  compileTemplate,
  lookupPath,
  renderTemplate,
  type TemplateContext,
} from '../../src/mappings/templates.js';

const NOW = new Date('2025-01-02T03:04:05.678Z');

function ctx(over: Partial<TemplateContext> = {}): TemplateContext {
  return {
    payload: {
      action: 'opened',
      repository: { full_name: 'acme/widgets', private: false, stars: 42 },
      messages: [{ subject: 'Hello' }, { subject: 'Second', tags: ['a', 'b'] }],
      nothing: null,
      html: '<b>"x" & y</b>',
    },
    headers: {
      'x-github-event': 'pull_request',
      'x-multi': ['one', 'two'],
      'content-type': 'application/json',
    },
    query: { source: 'ci', list: ['1', '2'] },
    path: 'github',
    now: NOW,
    ...over,
  };
}

const render = (template: string, c: TemplateContext = ctx()) => renderTemplate(template, c);

describe('renderTemplate: placeholder forms', () => {
  it('bare names and payload. look into the payload', () => {
    expect(render('PR {{action}} / {{payload.action}}')).toBe('PR opened / opened');
  });

  it('follows nested fields and array indexes', () => {
    expect(render('{{repository.full_name}}')).toBe('acme/widgets');
    expect(render('{{messages[0].subject}}|{{payload.messages[1].subject}}')).toBe('Hello|Second');
    expect(render('{{messages[1].tags[1]}}')).toBe('b');
    expect(render('{{messages.1.subject}}')).toBe('Second');
  });

  it('allows whitespace inside the braces', () => {
    expect(render('{{ action }}-{{  payload.repository.full_name\t}}')).toBe('opened-acme/widgets');
  });

  it('reads headers by lower-case name, dashes included', () => {
    expect(render('{{headers.x-github-event}}: {{headers.content-type}}')).toBe(
      'pull_request: application/json',
    );
    // The template may spell the name in any case; headers are stored lower-case.
    expect(render('{{headers.X-GitHub-Event}}')).toBe('pull_request');
  });

  it('joins a multi-valued header with ", "', () => {
    expect(render('{{headers.x-multi}}')).toBe('one, two');
  });

  it('reads query parameters', () => {
    expect(render('{{query.source}}')).toBe('ci');
    expect(render('{{query.list}}')).toBe('["1","2"]');
    expect(render('{{query.missing}}|{{query}}')).toBe('|');
  });

  it('renders the hook path and the current time', () => {
    expect(render('{{path}} at {{now}}')).toBe('github at 2025-01-02T03:04:05.678Z');
    expect(render('{{path.x}}{{now.y}}')).toBe('');
  });

  it('renders `payload` alone as the whole payload', () => {
    expect(render('{{payload}}', ctx({ payload: { a: 1 } }))).toBe('{"a":1}');
  });
});

describe('renderTemplate: values', () => {
  it('renders objects and arrays as JSON', () => {
    expect(render('{{repository}}')).toBe('{"full_name":"acme/widgets","private":false,"stars":42}');
    expect(render('{{messages[1].tags}}')).toBe('["a","b"]');
  });

  it('renders numbers and booleans as text', () => {
    expect(render('{{repository.stars}} {{repository.private}}')).toBe('42 false');
    expect(render('{{[0]}}', ctx({ payload: [0, true] }))).toBe('0');
  });

  it('renders missing values and null as empty', () => {
    expect(render('[{{missing}}][{{repository.missing.deeper}}][{{messages[9].subject}}][{{nothing}}]')).toBe(
      '[][][][]',
    );
    expect(render('[{{headers.x-none}}]')).toBe('[]');
    expect(render('[{{a}}]', ctx({ payload: null }))).toBe('[]');
    expect(render('[{{a}}]', ctx({ payload: 'text' }))).toBe('[]');
  });

  it('renders empty or malformed expressions as empty', () => {
    expect(render('[{{}}][{{ }}][{{a..b}}][{{a[x]}}][{{.a}}]')).toBe('[][][][][]');
  });

  it('escapes nothing', () => {
    expect(render('{{html}}')).toBe('<b>"x" & y</b>');
  });

  it('keeps text without placeholders, and an unclosed {{ as literal text', () => {
    expect(render('plain text')).toBe('plain text');
    expect(render('')).toBe('');
    expect(render('a {{action}} b {{action')).toBe('a opened b {{action');
    expect(render('}} {{ action }} {')).toBe('}} opened {');
  });
});

describe('renderTemplate: prototype safety', () => {
  // JSON.parse creates real own properties named __proto__, like a hostile webhook body would.
  const hostile = JSON.parse(
    '{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"x": "yes"}}, "prototype": "yes", "ok": {"__proto__": "yes"}}',
  );

  it('never follows __proto__, constructor or prototype, even as own keys', () => {
    const c = ctx({ payload: hostile });
    for (const expr of [
      '__proto__',
      '__proto__.polluted',
      'constructor',
      'constructor.prototype.x',
      'prototype',
      'ok.__proto__',
      'payload.__proto__.polluted',
      'payload.constructor',
    ]) {
      expect(render(`[{{${expr}}}]`, c), expr).toBe('[]');
    }
  });

  it('does not reach inherited properties', () => {
    expect(
      render(
        '[{{toString}}][{{constructor.name}}][{{hasOwnProperty}}][{{a.length}}]',
        ctx({ payload: { a: 'str' } }),
      ),
    ).toBe('[][][][]');
    // An array's length is its own property (not inherited), so it is reachable.
    expect(render('[{{messages.length}}]')).toBe('[2]');
    const inherited = Object.create({ secret: 'inherited' }) as object;
    expect(render('[{{secret}}]', ctx({ payload: inherited }))).toBe('[]');
    expect(render('[{{headers.constructor}}][{{query.__proto__}}][{{headers.__proto__}}]')).toBe('[][][]');
  });

  it('does not pollute Object.prototype', () => {
    render('{{__proto__.polluted}}', ctx({ payload: hostile }));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('lookupPath', () => {
  const root = { a: { b: [{ c: 1 }, { c: null }] }, 'x-y': 'dash' };

  it('returns the value, or undefined', () => {
    expect(lookupPath(root, 'a.b[0].c')).toBe(1);
    expect(lookupPath(root, 'a.b[1].c')).toBeNull();
    expect(lookupPath(root, 'a.b')).toEqual([{ c: 1 }, { c: null }]);
    expect(lookupPath(root, 'x-y')).toBe('dash');
    expect(lookupPath(root, ' a.b[0].c ')).toBe(1);
    expect(lookupPath(root, 'a.z.c')).toBeUndefined();
    expect(lookupPath(root, 'a.b[5]')).toBeUndefined();
    expect(lookupPath(root, 'a..b')).toBeUndefined();
    expect(lookupPath(root, '')).toBeUndefined();
    expect(lookupPath(root, 'a.__proto__')).toBeUndefined();
    expect(lookupPath(root, 'a.constructor')).toBeUndefined();
    expect(lookupPath(undefined, 'a')).toBeUndefined();
  });
});

describe('compileTemplate', () => {
  it('compiles once and renders many contexts', () => {
    const t = compileTemplate('{{path}}:{{n}}');
    expect(t(ctx({ payload: { n: 1 }, path: 'a' }))).toBe('a:1');
    expect(t(ctx({ payload: { n: 2 }, path: 'b' }))).toBe('b:2');
  });
});
