/**
 * A run's new user turn with its files (docs/attachments.md, "What the model sees").
 *
 * Everything a sender chose goes inside the safety boundary (safety.ts) with the
 * message: one line naming each file, and the text of each text file (`text/*`,
 * `application/json`). Images and PDFs also go to the provider as parts of the user
 * turn (`ModelAttachment`), which `openai-chat` and `anthropic-messages` send in their
 * own wire format; a provider that cannot take them (`command`, `echo`) has the line
 * naming each.
 *
 * The transcript keeps text only: the turn with the lines naming the files, but not
 * the text files' contents nor any bytes, so a session's history does not grow by the
 * files (they stay in the store with their run until retention deletes it).
 */
import { isImageType, isTextType, PDF_TYPE } from '../hook-model/attachments.js';
import type { Attachment, ClaimedRun, Store } from '../store/types.js';
import { runToEnd, type SliceOptions, type Work } from '../util/work-slices.js';
import { runBoundaryPass } from './boundary-passes.js';
import { decodedUtf8 } from './decode-utf8.js';
import type { ModelAttachment } from './providers/types.js';
import { wrapping } from './safety.js';

export interface UserTurn {
  /** The turn the model is given (wrapped unless the mapping allows unsafe content). */
  text: string;
  /** Images and PDFs, for the providers that take them as parts; empty for none. */
  attachments: ModelAttachment[];
  /** What the session's transcript keeps of the turn. */
  transcript: string;
}

/**
 * The run's new user turn; the store is read only when the run has files. A
 * turn with megabytes of text is composed and neutralised in slices, one such
 * turn at a time (boundary-passes.ts; docs/untrusted-content.md, "Cost").
 * Rejects with the signal's reason when it aborts first.
 */
export async function userTurnOf(
  store: Store,
  run: ClaimedRun,
  slices: SliceOptions = {},
): Promise<UserTurn> {
  const files = run.attachmentInfo?.length ? await store.runs.loadAttachments(run.id) : [];
  const textBytes = files.reduce((sum, file) => sum + (isTextType(file.mediaType) ? file.data.length : 0), 0);
  return runBoundaryPass(run.message.length + textBytes, composing(run, files), slices);
}

/** `userTurnOf` for files already read, at once. */
export function composeUserTurn(run: TurnSource, files: readonly Attachment[]): UserTurn {
  return runToEnd(composing(run, files));
}

type TurnSource = Pick<ClaimedRun, 'message' | 'source' | 'allowUnsafeExternalContent'>;

function* composing(run: TurnSource, files: readonly Attachment[]): Work<UserTurn> {
  const { text, transcript, attachments } = yield* turnParts(run, files);
  if (run.allowUnsafeExternalContent) return { text, transcript, attachments };
  const wrapped = yield* wrapping(text, { source: run.source });
  // Without files the transcript is the text: one pass, one wrap.
  const kept = files.length === 0 ? wrapped : yield* wrapping(transcript, { source: run.source });
  return { text: wrapped, transcript: kept, attachments };
}

/**
 * The turn's text and transcript before the boundary, and its images and PDFs.
 * The text is joined once from its pieces (the files' text decoded in chunks),
 * so a turn of megabytes is copied into one string once, not once per step.
 */
function* turnParts(run: Pick<ClaimedRun, 'message'>, files: readonly Attachment[]): Work<UserTurn> {
  if (files.length === 0) return { text: run.message, attachments: [], transcript: run.message };
  const lines = files.map((file, i) => attachmentLine(file, i));
  const heading = `${run.message}\n\nAttachments (${files.length}):\n`;
  const pieces = [heading];
  for (const [i, file] of files.entries()) {
    if (i > 0) pieces.push('\n');
    pieces.push(lines[i] as string);
    if (!isTextType(file.mediaType)) continue;
    pieces.push(':\n');
    for (const part of yield* decodedUtf8(file.data)) pieces.push(part);
  }
  return {
    text: pieces.join(''),
    attachments: files
      .filter((file) => isImageType(file.mediaType) || file.mediaType === PDF_TYPE)
      .map(({ name, mediaType, data }) => ({ name, mediaType, data })),
    transcript: `${heading}${lines.join('\n')}`,
  };
}

/** `[attachment 1] photo.png (image/png, 5120 bytes)`: the line naming a file. */
export function attachmentLine(
  file: Pick<Attachment, 'name' | 'mediaType' | 'bytes'>,
  index: number,
): string {
  return `[attachment ${index + 1}] ${file.name} (${file.mediaType}, ${file.bytes} bytes)`;
}
