/**
 * Spans of a text, [from, to) pairs kept flat in one typed array: a look-alike
 * costs 8 bytes, not an array object of its own (a text can hold a hundred
 * thousand of them: docs/untrusted-content.md, "Cost").
 */
const NONE = new Int32Array(0);

export class SpanList {
  /** Allocated on the first span: most texts have none. */
  private data = NONE;
  /** How many spans the list holds. */
  length = 0;

  from(index: number): number {
    return this.data[2 * index] as number;
  }

  to(index: number): number {
    return this.data[2 * index + 1] as number;
  }

  push(from: number, to: number): void {
    if (2 * this.length === this.data.length) {
      const data = new Int32Array(Math.max(64, this.data.length * 2));
      data.set(this.data);
      this.data = data;
    }
    this.data[2 * this.length] = from;
    this.data[2 * this.length + 1] = to;
    this.length++;
  }

  /** Adds a span that starts at or after the last one's start: merged into the last when they overlap or touch. */
  add(from: number, to: number): void {
    const last = 2 * this.length - 1;
    if (this.length > 0 && from <= (this.data[last] as number)) {
      this.data[last] = Math.max(this.data[last] as number, to);
    } else {
      this.push(from, to);
    }
  }

  toPairs(): Array<[number, number]> {
    return Array.from({ length: this.length }, (_, i) => [this.from(i), this.to(i)]);
  }
}
