/**
 * Splits a reply into messages no longer than a platform's limit, at the most
 * natural boundary that fits: between paragraphs, then lines, then words, and
 * only as a last resort inside a word. A fenced code block (``` … ```) is kept
 * whole when it fits in one message; when it does not, it is cut between its
 * lines and each piece is re-fenced, so every message renders as code.
 * Lengths are in UTF-16 units (what the platforms count); a surrogate pair is
 * never cut in half.
 */
const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;

interface Block {
  text: string;
  /** The opening fence line, for code blocks. */
  fence?: string;
  /** The closing fence marker, for code blocks. */
  close?: string;
}

export function splitMessage(text: string, limit: number): string[] {
  if (limit < 16) throw new Error(`message limit ${limit} is too small to split sensibly`);
  if (text.length <= limit) return [text];
  const pieces = toBlocks(text).flatMap((block) => fitBlock(block, limit));
  return pack(pieces, '\n\n', limit);
}

/** Paragraphs, with each fenced code block as one block whatever blank lines it holds. */
function toBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length > 0) blocks.push({ text: paragraph.join('\n') });
    paragraph = [];
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const open = FENCE.exec(line);
    if (open) {
      flush();
      const marker = open[2] as string;
      const body: string[] = [line];
      let j = i + 1;
      while (j < lines.length && !(lines[j] as string).trim().startsWith(marker))
        body.push(lines[j++] as string);
      if (j < lines.length) body.push(lines[j] as string);
      blocks.push({ text: body.join('\n'), fence: line, close: marker });
      i = j;
    } else if (line.trim() === '') {
      flush();
    } else {
      paragraph.push(line);
    }
  }
  flush();
  return blocks;
}

/** A block as pieces that each fit the limit. */
function fitBlock(block: Block, limit: number): string[] {
  if (block.text.length <= limit) return [block.text];
  if (block.fence !== undefined && block.close !== undefined) {
    const inner = block.text.split('\n').slice(1, -1);
    const room = limit - block.fence.length - block.close.length - 2;
    if (room >= 8) {
      return pack(
        inner.flatMap((line) => fitLine(line, room)),
        '\n',
        room,
      ).map((piece) => `${block.fence}\n${piece}\n${block.close}`);
    }
  }
  return pack(
    block.text.split('\n').flatMap((line) => fitLine(line, limit)),
    '\n',
    limit,
  );
}

/** A line as pieces that fit: between words, else hard cuts. */
function fitLine(line: string, limit: number): string[] {
  if (line.length <= limit) return [line];
  const words = line.split(/(?<=\s)/); // keep each word's trailing space with it
  return pack(
    words.flatMap((word) => (word.length <= limit ? [word] : hardCut(word, limit))),
    '',
    limit,
  );
}

function hardCut(word: string, limit: number): string[] {
  const pieces: string[] = [];
  let rest = word;
  while (rest.length > limit) {
    let cut = limit;
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut -= 1; // do not split a surrogate pair
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest) pieces.push(rest);
  return pieces;
}

/** Greedily joins pieces with `separator` into messages of at most `limit`. */
function pack(pieces: string[], separator: string, limit: number): string[] {
  const out: string[] = [];
  let current = '';
  for (const piece of pieces) {
    if (current === '') {
      current = piece;
    } else if (current.length + separator.length + piece.length <= limit) {
      current += separator + piece;
    } else {
      out.push(current);
      current = piece;
    }
  }
  if (current !== '') out.push(current);
  return out.map((message) => message.trimEnd()).filter((message) => message.trim() !== '');
}
