/**
 * What a writer makes of a reply: one message's text in the platform's formatting,
 * with what the platform needs beside it. The kit's OutboundMessage (../kit/types.ts)
 * is a part with its recipient.
 */
export interface OutboundPart {
  /** The text in the platform's native formatting (render() made it), or plain text. */
  text: string;
  /**
   * The same message without markup, when `text` carries markup the platform parses
   * (Telegram HTML): sent instead if the platform refuses the markup.
   */
  plain?: string;
  /** Style ranges over `text`, which is then plain (Signal's text styles). */
  styles?: readonly TextStyle[];
  /**
   * An operator notice (an alert, built from text a sender may have chosen): sent as plain text,
   * with the platform's link previews, unfurls and embeds off (docs/platforms.md, "Operator notices").
   */
  notice?: boolean;
}

/** A styled range of a plain text, in UTF-16 units (Signal's BodyRange). */
export interface TextStyle {
  start: number;
  length: number;
  style: 'BOLD' | 'ITALIC' | 'STRIKETHROUGH' | 'MONOSPACE';
}
