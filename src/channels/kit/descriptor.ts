/**
 * A messaging platform, whole (docs/platforms.md, "Adding a platform"): everything the
 * gateway knows of it, written in its own folder under ../platforms/ and listed once in
 * the registry (../platforms/index.ts) — its section of `channels` in the config, its forms
 * of `to`, its formatting, how it sends, and doctor's probe of its credentials.
 */
import type { z } from 'zod';
import type { ProbeCall } from '../../http/probe.js';
import type { Writer } from '../format/index.js';
import type { RecipientRules } from './recipients.js';
import type { Platform } from './types.js';

/** Which of format/'s writers a platform's replies go through, and how its notices stay literal. */
export interface PlatformFormat {
  /** Markdown replies: the platform's native formatting (format/). */
  writer: Writer;
  /**
   * Operator notices (format/notice.ts): makes one character literal where the platform
   * formats every message; absent where it does not.
   */
  noticeEscape?: (char: string) => string;
}

export interface PlatformDescriptor<Id extends string, Schema extends z.ZodType, Recipient> {
  /** Its key under `channels` and its name in `channel`; the registry's order is `channel: "last"`'s. */
  readonly id: Id;
  /** Its section of `channels` (docs/configuration.md): strict, with its defaults. */
  readonly config: Schema;
  readonly recipients: RecipientRules<Recipient>;
  /** The limit of one message's text; the delivery engine splits longer replies. */
  readonly maxMessageLength: number;
  readonly format: PlatformFormat;
  /** Its sending, for the configured section. */
  platform(config: z.output<Schema>): Platform;
  /** Doctor's probe: one read-only call proving the credentials; `name` heads its result. */
  probe(config: z.output<Schema>, name: string): ProbeCall;
}

/** A descriptor, its types inferred (the config schema's exact type reaches config/schema.ts). */
export function definePlatform<Id extends string, Schema extends z.ZodType, Recipient>(
  descriptor: PlatformDescriptor<Id, Schema, Recipient>,
): PlatformDescriptor<Id, Schema, Recipient> {
  return descriptor;
}
