// Someone else's text, shown as written and never obeyed: the web UI's twin of
// tiny_harness/core/literal.py, with the same characters and the same escapes.
//
// React renders every string as text (never as HTML), so no markup in a message is ever
// interpreted. What a browser would still act on, or hide, is a control character: a
// right-to-left override (U+202E) shows "exe.txt" where "txt.exe" is written, a bidi isolate
// reorders a name, and C0/C1 controls (ESC, BEL, CR, ...) are invisible, so a message could
// carry an escape sequence no one sees. literal() shows each of them as a visible escape
// (\x1b, \u202e), as kubectl harness and the TUI do, and leaves everything else as it was.

// C0 controls but tab and newline, DEL and C1, the bidi marks, embeddings, overrides and
// isolates, the line and paragraph separators, and lone surrogates.
const ALWAYS =
  "\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\u2028\\u2029";
const MULTI_LINE = new RegExp(`[${ALWAYS}]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]`, "g");
const ONE_LINE = new RegExp(`[${ALWAYS}\\t\\n]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]`, "g");
const NAMED: Record<string, string> = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

function escape(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** `text` with every character a terminal or a bidi-aware renderer would obey shown as an
 * escape; with `lines` (the default) newlines and tabs are kept, without they are escaped too. */
export function literal(text: string, lines = true): string {
  return text.replace(lines ? MULTI_LINE : ONE_LINE, escape);
}
