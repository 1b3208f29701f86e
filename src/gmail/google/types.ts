/**
 * The Gmail API resources agentgate reads (users.messages `format=full`), as Google
 * documents them. int64 values (historyId, internalDate) arrive as JSON strings.
 */

export interface GmailHeader {
  name: string;
  value: string;
}

export interface GmailMessagePartBody {
  size?: number;
  /** base64url of the part's bytes (transfer encoding already undone by Google). */
  data?: string;
  /** Set instead of `data` for attachments and very large parts. */
  attachmentId?: string;
}

export interface GmailMessagePart {
  partId?: string;
  mimeType?: string;
  filename?: string;
  headers?: GmailHeader[];
  body?: GmailMessagePartBody;
  parts?: GmailMessagePart[];
}

export interface GmailMessage {
  id: string;
  threadId?: string;
  labelIds?: string[];
  snippet?: string;
  historyId?: string;
  internalDate?: string;
  sizeEstimate?: number;
  payload?: GmailMessagePart;
}
