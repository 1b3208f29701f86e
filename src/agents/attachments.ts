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
import type { SliceOptions } from '../util/work-slices.js';
import type { ModelAttachment } from './providers/types.js';
import { wrapUntrusted, wrapUntrustedInSlices } from './safety.js';

export interface UserTurn {
  /** The turn the model is given (wrapped unless the mapping allows unsafe content). */
  text: string;
  /** Images and PDFs, for the providers that take them as parts; empty for none. */
  attachments: ModelAttachment[];
  /** What the session's transcript keeps of the turn. */
  transcript: string;
}

/**
 * The run's new user turn; the store is read only when the run has files. Its
 * text is neutralised in slices (docs/untrusted-content.md, "Cost"): a run
 * with megabytes of text files never holds the event loop for more than a
 * slice. Rejects with the signal's reason when it aborts first.
 */
export async function userTurnOf(
  store: Store,
  run: ClaimedRun,
  slices: SliceOptions = {},
): Promise<UserTurn> {
  const files = run.attachmentInfo?.length ? await store.runs.loadAttachments(run.id) : [];
  const { text, transcript, attachments } = turnParts(run, files);
  if (run.allowUnsafeExternalContent) return { text, transcript, attachments };
  const options = { source: run.source };
  const wrapped = await wrapUntrustedInSlices(text, options, slices);
  // Without files the transcript is the text, and one pass is enough.
  const kept = files.length === 0 ? wrapped : await wrapUntrustedInSlices(transcript, options, slices);
  return { text: wrapped, transcript: kept, attachments };
}

/** `userTurnOf` for files already read, neutralised at once. */
export function composeUserTurn(
  run: Pick<ClaimedRun, 'message' | 'source' | 'allowUnsafeExternalContent'>,
  files: readonly Attachment[],
): UserTurn {
  const { text, transcript, attachments } = turnParts(run, files);
  if (run.allowUnsafeExternalContent) return { text, transcript, attachments };
  const wrapped = wrapUntrusted(text, { source: run.source });
  const kept = files.length === 0 ? wrapped : wrapUntrusted(transcript, { source: run.source });
  return { text: wrapped, transcript: kept, attachments };
}

/** The turn's text and transcript before the boundary, and its images and PDFs. */
function turnParts(run: Pick<ClaimedRun, 'message'>, files: readonly Attachment[]): UserTurn {
  if (files.length === 0) return { text: run.message, attachments: [], transcript: run.message };
  const lines = files.map((file, i) => attachmentLine(file, i));
  const withText = files.map((file, i) =>
    isTextType(file.mediaType) ? `${lines[i]}:\n${file.data.toString('utf8')}` : lines[i],
  );
  const list = (entries: readonly (string | undefined)[]) =>
    `${run.message}\n\nAttachments (${files.length}):\n${entries.join('\n')}`;
  return {
    text: list(withText),
    attachments: files
      .filter((file) => isImageType(file.mediaType) || file.mediaType === PDF_TYPE)
      .map(({ name, mediaType, data }) => ({ name, mediaType, data })),
    transcript: list(lines),
  };
}

/** `[attachment 1] photo.png (image/png, 5120 bytes)`: the line naming a file. */
export function attachmentLine(
  file: Pick<Attachment, 'name' | 'mediaType' | 'bytes'>,
  index: number,
): string {
  return `[attachment ${index + 1}] ${file.name} (${file.mediaType}, ${file.bytes} bytes)`;
}
