/**
 * Tool selectors and a run's tool set (docs/tools.md, "Choosing tools"): `<server>.<tool>`
 * with `*` as a wildcard within its part; the agent's `allow` narrowed by the mapping's
 * `tools`, never widened; which servers a run needs started.
 */
import { describe, expect, it } from 'vitest';
import {
  exactServerOf,
  isOffered,
  selectorMatches,
  serversFor,
  splitToolName,
} from '../../src/tools/selectors.js';

describe('selectorMatches', () => {
  it.each([
    ['repo.get_pull_request', 'repo.get_pull_request', true],
    ['repo.get_pull_request', 'repo.get_pull_requests', false],
    ['repo.*', 'repo.get_pull_request', true],
    ['repo.*', 'repos.get_pull_request', false],
    ['*.search', 'docs.search', true],
    ['*.search', 'docs.search_all', false],
    ['tickets.create_*', 'tickets.create_ticket', true],
    ['tickets.create_*', 'tickets.close_ticket', false],
    ['*.*', 'any.thing', true],
    ['re*.get', 'repo.get', true],
    // The server part never reaches into the tool's: `*` in it does not cross the dot.
    ['repo*', 'repo.get', false],
    ['*', 'repo.get', false],
    // Tool names may hold dots and slashes; the server part is up to the first dot.
    ['repo.issues.*', 'repo.issues.list', true],
    ['repo.issues/*', 'repo.issues/list', true],
    ['repo.issues.*', 'repo.issuesXlist', false],
    // Characters a regular expression would read are plain here.
    ['a-b.c', 'a-b.c', true],
    ['repo.get.pr', 'repo.getXpr', false],
  ])('%s selects %s: %s', (selector, name, expected) => {
    expect(selectorMatches(selector, name)).toBe(expected);
  });
});

describe('a run’s tools', () => {
  const allow = ['repo.*', 'tickets.create_ticket'];

  it('the agent’s allow-list alone, without a mapping', () => {
    expect(isOffered('repo.get_pull_request', allow)).toBe(true);
    expect(isOffered('tickets.create_ticket', allow)).toBe(true);
    expect(isOffered('tickets.delete_ticket', allow)).toBe(false);
  });

  it('a mapping keeps only tools the agent allows too', () => {
    const mapping = ['repo.get_pull_request', 'tickets.*'];
    expect(isOffered('repo.get_pull_request', allow, mapping)).toBe(true);
    expect(isOffered('repo.merge', allow, mapping)).toBe(false);
    expect(isOffered('tickets.create_ticket', allow, mapping)).toBe(true);
    // `tickets.*` in the mapping does not widen the agent's one tickets tool.
    expect(isOffered('tickets.delete_ticket', allow, mapping)).toBe(false);
  });

  it('an empty mapping list keeps nothing; an empty allow-list offers nothing', () => {
    expect(isOffered('repo.get_pull_request', allow, [])).toBe(false);
    expect(isOffered('repo.get_pull_request', [], ['repo.*'])).toBe(false);
  });

  it('starts only the servers both lists can select from', () => {
    const servers = ['repo', 'tickets', 'docs'];
    expect(serversFor(servers, allow)).toEqual(['repo', 'tickets']);
    expect(serversFor(servers, allow, ['repo.get_pull_request'])).toEqual(['repo']);
    expect(serversFor(servers, ['*.search'])).toEqual(servers);
    expect(serversFor(servers, ['*.search'], ['docs.*'])).toEqual(['docs']);
    expect(serversFor(servers, allow, [])).toEqual([]);
  });
});

describe('names', () => {
  it('splits <server>.<tool> at the first dot', () => {
    expect(splitToolName('repo.issues.list')).toEqual({ server: 'repo', tool: 'issues.list' });
  });

  it('names the server of a selector only when its server part has no wildcard', () => {
    expect(exactServerOf('repo.*')).toBe('repo');
    expect(exactServerOf('re*.get')).toBeUndefined();
    expect(exactServerOf('*.search')).toBeUndefined();
  });
});
