// Files a participant attaches to a message, checked here before anything is sent: the bound
// the gateway keeps, so a file it would refuse is refused at once, on the page, saying why; and
// whether the model can read the file, so the page can say when it cannot.
//
// The server's rules live in tiny_harness/core/sizes.py (MESSAGE_BYTES, FILE_BYTES, and
// message_bytes: a file counts as its base64 text) and tiny_harness/core/attachments.py (any
// file is taken and kept; kind_of says which a model reads: IMAGE_TYPES, PDF_TYPE, text/* and
// TEXT_APPLICATION_TYPES; a file with no media type is OPAQUE_TYPE);
// tiny_harness/a2a_gateway/rendering.py (message_parts) applies them to an inbound message.
// Keep the values below equal to them; the gateway still checks every message, and its refusal
// is shown as it is (the composer's error path).
import { base64Length } from "./base64";

const KIB = 1024;
/** core/sizes.py MESSAGE_BYTES: a message's text and its files' base64 together. */
export const MESSAGE_BYTES = 256 * KIB;
/** core/sizes.py FILE_BYTES: the largest file whose base64 fits a message. */
export const FILE_BYTES = (MESSAGE_BYTES * 3) / 4;

/** core/attachments.py IMAGE_TYPES: the images a model is given as images. */
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
/** core/attachments.py OPAQUE_TYPE: a file whose type is not known. */
export const OPAQUE_TYPE = "application/octet-stream";
/** What a model reads, in words. */
export const READ = "images (PNG, JPEG, GIF, WebP), PDFs and text (text/*, JSON, XML, YAML)";

export type FileKind = "image" | "pdf" | "text";

/** A media type without its parameters, in lower case: "text/plain; charset=utf-8" is "text/plain". */
export function baseType(mediaType: string): string {
  return (mediaType.split(";", 1)[0] ?? "").trim().toLowerCase();
}

/** The kind of file ``mediaType`` names, or null when no model can be given it: such a file is
 * kept with the task and named to the model, which cannot read it (core/attachments.py kind_of). */
export function kindOf(mediaType: string): FileKind | null {
  const base = baseType(mediaType);
  if (IMAGE_TYPES.has(base)) return "image";
  if (base === PDF_TYPE) return "pdf";
  if (base.startsWith("text/") || TEXT_APPLICATION_TYPES.has(base)) return "text";
  return null;
}

/** The media types a file's name implies when the browser gives none (a .md or .yaml file
 * often comes with an empty type), as the gateway guesses for a part without one. */
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
  return BY_EXTENSION[extension] ?? OPAQUE_TYPE;
}

/** Whether the model can read the file; when not, what the page says of it. */
export function unread(file: Chosen): string | null {
  return kindOf(file.mediaType) === null ? "kept with the task, and the model told only its name" : null;
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

/** Why one file cannot be sent (null: it can): any kind is taken, within the bound. */
export function refuseFile(file: Chosen): string | null {
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
