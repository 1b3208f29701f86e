/**
 * A one-line progress indicator on stderr, only when stderr is a terminal: a
 * spinner and a message that can change (`update`), erased by `stop`. When
 * stderr is a pipe or a file it prints nothing, so scripts and logs stay clean.
 */
import type { CliStream } from './io.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const INTERVAL_MS = 100;

export interface Progress {
  update(message: string): void;
  stop(): void;
}

export function startProgress(message: string, stream: CliStream): Progress {
  if (!stream.isTTY) return { update() {}, stop() {} };
  let current = message;
  let frame = 0;
  const draw = () => {
    stream.write(`\r\x1b[2K${FRAMES[frame % FRAMES.length]} ${current}`);
    frame++;
  };
  draw();
  const timer = setInterval(draw, INTERVAL_MS);
  timer.unref();
  return {
    update(next) {
      current = next;
    },
    stop() {
      clearInterval(timer);
      stream.write('\r\x1b[2K');
    },
  };
}
