// The files chosen for a message, from the file input to the parts sent: what the composer and
// the new-task form share, so both check, refuse and read files one way (attachments.ts holds
// the checks and their sentences). A pure module, apart from reading a file's bytes.
import { choose, mediaTypeOf, refuseMessage, type Chosen } from "./attachments";
import type { OutgoingFile } from "./client";

/** A file chosen for the next message, as the page holds it until it is sent. */
export interface Attached extends Chosen {
  /** Tells two files of the same name apart in the list. */
  key: string;
  file: Blob;
}

/** What the page says when a chosen file can no longer be read. */
export const UNREADABLE = "A chosen file could not be read (moved or deleted?): remove it and choose it again.";

/** ``files`` with the ``picked`` ones taken in, each checked with the message typed so far
 * (``text``), and the refusals in one sentence (null when none was refused). */
export function attach(
  files: readonly Attached[],
  picked: readonly File[],
  text: string,
  key: () => string = () => crypto.randomUUID(),
): { files: Attached[]; problem: string | null } {
  const added = picked.map((file) => ({
    key: key(),
    file,
    name: file.name,
    mediaType: mediaTypeOf(file.name, file.type),
    size: file.size,
  }));
  const { chosen, refused } = choose(files, added, text);
  return { files: chosen, problem: refused.length ? refused.join(" ") : null };
}

/** The files' bytes as a message with ``text`` carries them, or why they cannot be sent: the
 * message past its bound, or a file that can no longer be read. */
export async function outgoing(
  files: readonly Attached[],
  text: string,
): Promise<{ files: OutgoingFile[]; problem: null } | { files: null; problem: string }> {
  const tooLarge = refuseMessage(files, text);
  if (tooLarge) return { files: null, problem: tooLarge };
  try {
    return { files: await Promise.all(files.map(read)), problem: null };
  } catch {
    return { files: null, problem: UNREADABLE };
  }
}

async function read(file: Attached): Promise<OutgoingFile> {
  return { name: file.name, mediaType: file.mediaType, bytes: new Uint8Array(await file.file.arrayBuffer()) };
}
