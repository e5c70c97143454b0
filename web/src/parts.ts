// What a part of a message or an artifact shows as, and what downloading an artifact gives: a
// pure module, chosen by the part's kind and media type.
//
// Text is shown as text (React renders it as text, never as markup: a text/html or Markdown
// artifact reads as its source), a JSON object pretty-printed, an image inline from its bytes
// as a data: URL (the page's Content-Security-Policy allows data: images and nothing else from
// outside), and only the image kinds a model reads (core/attachments.py IMAGE_TYPES; no SVG,
// a document that can hold scripts); any other file by its name, type and size, with a
// download link.
import type { Artifact, Part } from "@a2a-js/sdk";
import { baseType, IMAGE_TYPES, kindOf } from "./attachments";
import { toBase64 } from "./base64";

/** The most characters of one part the page shows; the download has it whole. */
export const SHOWN_CHARS = 100_000;

export type Shown =
  | { kind: "text"; text: string; cut: boolean }
  | { kind: "json"; text: string; cut: boolean }
  | { kind: "image"; src: string; name: string; mediaType: string; size: number }
  | { kind: "file"; name: string; mediaType: string; size: number }
  | { kind: "link"; url: string; name: string; mediaType: string };

/** A file part of a message, as the conversation lists it. */
export interface FileNote {
  name: string;
  mediaType: string;
  /** Its size in bytes (null for a URL). */
  size: number | null;
  /** Its bytes (null for a URL); an image's preview is made of them (previewOf), when the line
   * is shown, not at each read of the history. */
  bytes: Uint8Array | null;
  url: string | null;
}

/** A small preview's source: an image's bytes as a data: URL (null for anything else). */
export function previewOf(file: FileNote): string | null {
  return file.bytes ? imageSource(file.mediaType, file.bytes) : null;
}

const OCTETS = "application/octet-stream";

export function bytesOf(part: Part): Uint8Array | null {
  return part.content?.$case === "raw" ? (part.content.value as Uint8Array) : null;
}

/** An image's bytes as a data: URL, only for the image kinds a model reads. */
export function imageSource(mediaType: string, bytes: Uint8Array): string | null {
  const base = baseType(mediaType);
  return IMAGE_TYPES.has(base) ? `data:${base};base64,${toBase64(bytes)}` : null;
}

export function shownPart(part: Part): Shown {
  const content = part.content;
  switch (content?.$case) {
    case "text":
      return bounded("text", content.value);
    case "data":
      return bounded("json", pretty(content.value));
    case "url":
      return { kind: "link", url: content.value, name: part.filename || content.value, mediaType: part.mediaType };
    case "raw": {
      const bytes = content.value as Uint8Array;
      const name = part.filename || "file";
      const mediaType = part.mediaType || OCTETS;
      const src = imageSource(mediaType, bytes);
      if (src) return { kind: "image", src, name, mediaType, size: bytes.length };
      if (kindOf(mediaType) === "text") {
        const text = new TextDecoder().decode(bytes);
        if (isJsonType(mediaType)) {
          try {
            return bounded("json", pretty(JSON.parse(text)));
          } catch {
            // not JSON after all: shown as the text it is
          }
        }
        return bounded("text", text);
      }
      return { kind: "file", name, mediaType, size: bytes.length };
    }
    default:
      return bounded("text", "");
  }
}

function bounded(kind: "text" | "json", text: string): Shown {
  return text.length > SHOWN_CHARS ? { kind, text: text.slice(0, SHOWN_CHARS), cut: true } : { kind, text, cut: false };
}

function pretty(value: unknown): string {
  return JSON.stringify(value ?? null, null, 2);
}

function isJsonType(mediaType: string): boolean {
  const base = baseType(mediaType);
  return base === "application/json" || base.endsWith("+json");
}

/** A message's file parts, for the conversation (its text parts are its line's text). */
export function filesOf(parts: readonly Part[]): FileNote[] {
  const out: FileNote[] = [];
  for (const part of parts) {
    const content = part.content;
    if (content?.$case === "raw") {
      const bytes = content.value as Uint8Array;
      const mediaType = part.mediaType || OCTETS;
      out.push({ name: part.filename || "file", mediaType, size: bytes.length, bytes, url: null });
    } else if (content?.$case === "url") {
      out.push({ name: part.filename || content.value, mediaType: part.mediaType, size: null, bytes: null, url: content.value });
    }
  }
  return out;
}

// -- downloads -----------------------------------------------------------------------------

export interface Download {
  filename: string;
  mediaType: string;
  bytes: Uint8Array;
}

/** An artifact's size as downloaded, in bytes. */
export function artifactSize(artifact: Pick<Artifact, "parts">): number {
  return content(artifact.parts).length;
}

/** What the artifact's download link gives: a single file as its bytes under its own name; a
 * single JSON object as `<name>.json`; text (with any JSON among it) as `<name>.txt`, or `.md`
 * when it is Markdown; anything else as the bytes `kubectl harness artifact` writes for it. */
export function downloadOf(artifact: Pick<Artifact, "name" | "parts">): Download {
  const parts = artifact.parts;
  const only = parts.length === 1 ? parts[0] : undefined;
  const bytes = only ? bytesOf(only) : null;
  if (only && bytes) {
    const mediaType = only.mediaType || OCTETS;
    return { filename: safeName(only.filename || withExtension(artifact.name, extensionOf(mediaType))), mediaType, bytes };
  }
  if (only?.content?.$case === "data") {
    return { filename: withExtension(artifact.name, ".json"), mediaType: "application/json", bytes: content(parts) };
  }
  if (parts.some((p) => p.content?.$case === "raw" || p.content?.$case === "url")) {
    return { filename: withExtension(artifact.name, ".bin"), mediaType: OCTETS, bytes: content(parts) };
  }
  const markdown = parts.some((p) => baseType(p.mediaType) === "text/markdown");
  return {
    filename: withExtension(artifact.name, markdown ? ".md" : ".txt"),
    mediaType: `${markdown ? "text/markdown" : "text/plain"};charset=utf-8`,
    bytes: content(parts),
  };
}

/** A file part of a several-part artifact, downloaded on its own. */
export function fileDownload(part: Part, artifactName: string): Download | null {
  const bytes = bytesOf(part);
  if (!bytes) return null;
  const mediaType = part.mediaType || OCTETS;
  return { filename: safeName(part.filename || withExtension(artifactName, extensionOf(mediaType))), mediaType, bytes };
}

/** The parts in order, as `kubectl harness artifact` writes them (cli/kubectl_artifact.py
 * content): a text as UTF-8, a file as its bytes, a data part as indented JSON on lines of its
 * own (so one JSON object is exactly its pretty form and a newline). */
export function content(parts: readonly Part[]): Uint8Array {
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let endsWithNewline = true;
  let empty = true;
  const add = (bytes: Uint8Array) => {
    if (!bytes.length) return;
    chunks.push(bytes);
    empty = false;
    endsWithNewline = bytes[bytes.length - 1] === 0x0a;
  };
  for (const part of parts) {
    const c = part.content;
    if (c?.$case === "text") add(encoder.encode(c.value));
    else if (c?.$case === "raw") add(c.value as Uint8Array);
    else if (c?.$case === "url") add(encoder.encode(`${c.value}\n`));
    else if (c?.$case === "data") {
      if (!empty && !endsWithNewline) add(encoder.encode("\n"));
      add(encoder.encode(`${JSON.stringify(c.value ?? null, null, 2)}\n`));
    }
  }
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  "image/png": ".png",
  "image/jpeg": ".jpg",
  "image/gif": ".gif",
  "image/webp": ".webp",
  "application/pdf": ".pdf",
  "application/json": ".json",
  "application/xml": ".xml",
  "application/yaml": ".yaml",
  "text/markdown": ".md",
  "text/csv": ".csv",
  "text/plain": ".txt",
};

function extensionOf(mediaType: string): string {
  return EXTENSIONS[baseType(mediaType)] ?? "";
}

/** ``name`` as a file name ending in ``extension`` (not twice). */
function withExtension(name: string, extension: string): string {
  const safe = safeName(name);
  return extension && !safe.toLowerCase().endsWith(extension) ? `${safe}${extension}` : safe;
}

/** A name a file system takes: no path separators, no control characters, no bidi override
 * (which would show "report\u202efdp.exe" as "reportexe.pdf" in the save dialog), not empty. */
export function safeName(name: string): string {
  const cleaned = name.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029/\\:*?"<>|]+/g, "-").replace(/^[.\s-]+/, "").trim();
  return cleaned || "artifact";
}
