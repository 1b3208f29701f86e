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
import type { ModelAttachment } from './providers/types.js';
import { wrapUntrusted } from './safety.js';

export interface UserTurn {
  /** The turn the model is given (wrapped unless the mapping allows unsafe content). */
  text: string;
  /** Images and PDFs, for the providers that take them as parts; empty for none. */
  attachments: ModelAttachment[];
  /** What the session's transcript keeps of the turn. */
  transcript: string;
}

/** The run's new user turn; the store is read only when the run has files. */
export async function userTurnOf(store: Store, run: ClaimedRun): Promise<UserTurn> {
  const files = run.attachmentInfo?.length ? await store.runs.loadAttachments(run.id) : [];
  return composeUserTurn(run, files);
}

export function composeUserTurn(
  run: Pick<ClaimedRun, 'message' | 'source' | 'allowUnsafeExternalContent'>,
  files: readonly Attachment[],
): UserTurn {
  const guard = (content: string) =>
    run.allowUnsafeExternalContent ? content : wrapUntrusted(content, { source: run.source });
  if (files.length === 0) {
    const text = guard(run.message);
    return { text, attachments: [], transcript: text };
  }
  const lines = files.map((file, i) => attachmentLine(file, i));
  const withText = files.map((file, i) =>
    isTextType(file.mediaType) ? `${lines[i]}:\n${file.data.toString('utf8')}` : lines[i],
  );
  const list = (entries: readonly (string | undefined)[]) =>
    `${run.message}\n\nAttachments (${files.length}):\n${entries.join('\n')}`;
  return {
    text: guard(list(withText)),
    attachments: files
      .filter((file) => isImageType(file.mediaType) || file.mediaType === PDF_TYPE)
      .map(({ name, mediaType, data }) => ({ name, mediaType, data })),
    transcript: guard(list(lines)),
  };
}

/** `[attachment 1] photo.png (image/png, 5120 bytes)`: the line naming a file. */
export function attachmentLine(
  file: Pick<Attachment, 'name' | 'mediaType' | 'bytes'>,
  index: number,
): string {
  return `[attachment ${index + 1}] ${file.name} (${file.mediaType}, ${file.bytes} bytes)`;
}
