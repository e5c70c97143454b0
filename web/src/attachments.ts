// Files a participant attaches to a message, checked here before anything is sent: the same
// kinds and bounds the gateway takes, so a file it would refuse is refused at once, on the page,
// saying why and what is taken.
//
// The server's rules live in tiny_harness/core/attachments.py (the kinds: IMAGE_TYPES, PDF_TYPE,
// text/* and TEXT_APPLICATION_TYPES, and TAKEN, the words a refusal lists them in) and
// tiny_harness/core/sizes.py (MESSAGE_BYTES, FILE_BYTES, and message_bytes: a file counts as its
// base64 text); tiny_harness/a2a_gateway/rendering.py (message_parts) applies them to an
// inbound message. Keep the three below equal to them; the gateway still checks every message,
// and its refusal is shown as it is (the composer's error path).
import { base64Length } from "./base64";

const KIB = 1024;
/** core/sizes.py MESSAGE_BYTES: a message's text and its files' base64 together. */
export const MESSAGE_BYTES = 256 * KIB;
/** core/sizes.py FILE_BYTES: the largest file whose base64 fits a message. */
export const FILE_BYTES = (MESSAGE_BYTES * 3) / 4;

/** core/attachments.py IMAGE_TYPES: the images every model adapter takes. */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
/** core/attachments.py PDF_TYPE. */
export const PDF_TYPE = "application/pdf";
/** core/attachments.py TEXT_APPLICATION_TYPES: text outside text/*. */
export const TEXT_APPLICATION_TYPES: ReadonlySet<string> = new Set([
  "application/json",
  "application/xml",
  "application/yaml",
  "application/x-yaml",
]);
/** core/attachments.py TAKEN, less the URLs (the composer sends bytes). */
export const TAKEN = "images (PNG, JPEG, GIF, WebP), PDF documents, or text (text/*, JSON, XML, YAML)";

/** What the file picker offers first (any file may still be chosen, and is then checked). */
export const ACCEPT = [
  ...IMAGE_TYPES,
  PDF_TYPE,
  "text/*",
  ...TEXT_APPLICATION_TYPES,
  ".md",
  ".csv",
  ".json",
  ".xml",
  ".yaml",
  ".yml",
].join(",");

export type FileKind = "image" | "pdf" | "text";

/** A media type without its parameters, in lower case: "text/plain; charset=utf-8" is "text/plain". */
export function baseType(mediaType: string): string {
  return (mediaType.split(";", 1)[0] ?? "").trim().toLowerCase();
}

/** The kind of file ``mediaType`` names, or null when the gateway does not take it
 * (core/attachments.py kind_of). */
export function kindOf(mediaType: string): FileKind | null {
  const base = baseType(mediaType);
  if (IMAGE_TYPES.has(base)) return "image";
  if (base === PDF_TYPE) return "pdf";
  if (base.startsWith("text/") || TEXT_APPLICATION_TYPES.has(base)) return "text";
  return null;
}

/** The media types a file's name implies when the browser gives none (a .md or .yaml file
 * often comes with an empty type); as the gateway does for a part without one, by its name. */
const BY_EXTENSION: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: PDF_TYPE,
  txt: "text/plain",
  md: "text/markdown",
  markdown: "text/markdown",
  csv: "text/csv",
  html: "text/html",
  json: "application/json",
  xml: "application/xml",
  yaml: "application/yaml",
  yml: "application/yaml",
};

export function mediaTypeOf(name: string, given: string): string {
  if (given) return given;
  const extension = name.includes(".") ? (name.split(".").pop() ?? "").toLowerCase() : "";
  return BY_EXTENSION[extension] ?? "";
}

/** A file as the composer holds it until it is sent: what the checks read. */
export interface Chosen {
  name: string;
  mediaType: string;
  size: number;
}

/** The chosen files with ``added`` taken in, and a sentence for each one refused (those are
 * left out). ``text`` is the message typed so far: the message's bound counts it too. */
export function choose<T extends Chosen>(
  chosen: readonly T[],
  added: readonly T[],
  text = "",
): { chosen: T[]; refused: string[] } {
  const out = [...chosen];
  const refused: string[] = [];
  for (const file of added) {
    const why = refuseFile(file) ?? refuseMessage([...out, file], text);
    if (why) refused.push(why);
    else out.push(file);
  }
  return { chosen: out, refused };
}

/** Why one file cannot be sent (null: it can): its kind, then its size. */
export function refuseFile(file: Chosen): string | null {
  if (!file.mediaType) {
    return `${file.name} was not sent: its type is not known. The harness takes ${TAKEN}.`;
  }
  if (kindOf(file.mediaType) === null) {
    return `${file.name} was not sent: files of type ${file.mediaType} are not taken. The harness takes ${TAKEN}.`;
  }
  if (file.size > FILE_BYTES) {
    return (
      `${file.name} is too large to send: ${size(file.size)}, and a file may be at most ` +
      `${size(FILE_BYTES)} (it travels as base64, a third larger, in a message of at most ` +
      `${size(MESSAGE_BYTES)}). Send a smaller file.`
    );
  }
  return null;
}

/** Why a message of ``files`` and ``text`` is too large to send (null: it fits), counted as the
 * gateway counts it: the text in UTF-8, each file as its base64. */
export function refuseMessage(files: readonly Chosen[], text: string): string | null {
  const total = messageBytes(files, text);
  if (total <= MESSAGE_BYTES) return null;
  return (
    `This message would carry ${size(total)} (a file counts as its base64, a third more than ` +
    `its bytes), and a message carries at most ${size(MESSAGE_BYTES)}: send the files in ` +
    "several messages, or smaller ones."
  );
}

export function messageBytes(files: readonly Chosen[], text: string): number {
  const typed = new TextEncoder().encode(text).length;
  return files.reduce((sum, f) => sum + base64Length(f.size), typed);
}

/** A size as people read it: 812 B, 12.4 KiB, 192 KiB, 1.2 MiB. */
export function size(bytes: number): string {
  if (bytes < KIB) return `${bytes} B`;
  if (bytes < KIB * KIB) return `${trim(bytes / KIB)} KiB`;
  return `${trim(bytes / (KIB * KIB))} MiB`;
}

function trim(value: number): string {
  return value.toFixed(1).replace(/\.0$/, "");
}
