/**
 * A stdio server's stderr in the gateway log (docs/tools.md, "stdio"): one debug entry per
 * line, secrets redacted, lines cut, at most so many a minute, then a count.
 */
import { describe, expect, it } from 'vitest';
import { stderrToLog } from '../../src/tools/mcp/stderr-log.js';
import { capturedLog } from './support.js';

describe('stderrToLog', () => {
  it('logs each line at debug, secrets redacted, long lines cut, lines split across chunks joined', () => {
    const { log, lines } = capturedLog();
    const write = stderrToLog('repo', log, ['s3cret-token', 'on'], { lineChars: 20, linesPerMinute: 10 });
    write(Buffer.from('using s3cret-token now\nhalf a '));
    write(Buffer.from('line\n\n'));
    write(Buffer.from(`${'y'.repeat(30)}\n`));
    expect(lines.map((line) => [line.level, line.server, line.stderr])).toEqual([
      [20, 'repo', 'using [redacted] now'],
      // "on" is too short to search for: it would blank out every line.
      [20, 'repo', 'half a line'],
      [20, 'repo', `${'y'.repeat(20)}…`],
    ]);
  });

  it('past the lines of a minute, the rest are counted and the count logged when the minute is over', () => {
    const { log, lines } = capturedLog();
    let now = 0;
    const write = stderrToLog('repo', log, [], { lineChars: 100, linesPerMinute: 2 }, () => now);
    write(Buffer.from('a\nb\nc\nd\n'));
    now = 60_000;
    write(Buffer.from('e\n'));
    expect(lines.map((line) => line.stderr ?? `dropped ${line.dropped}`)).toEqual([
      'a',
      'b',
      'dropped 2',
      'e',
    ]);
  });

  it('a line that never ends is cut rather than kept without bound', () => {
    const { log, lines } = capturedLog();
    const write = stderrToLog('repo', log, [], { lineChars: 10, linesPerMinute: 10 });
    write(Buffer.from('z'.repeat(25)));
    expect(lines.map((line) => line.stderr)).toEqual([`${'z'.repeat(10)}…`]);
  });
});
