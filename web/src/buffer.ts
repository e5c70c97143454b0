// Node's Buffer, as much of it as the A2A SDK uses, for the browser.
//
// The SDK (@a2a-js/sdk 1.3) decodes and encodes a file part's `raw` bytes with the global
// `Buffer` (`Buffer.from(base64, "base64")`, `Buffer.from(bytes)`, `.toString("base64")`,
// `Buffer.isBuffer`), which browsers do not have: without this, a task whose history holds a
// file, or whose artifacts do, could not be read, and no file could be sent. Installed once,
// before the SDK runs (main.tsx imports it first), and only where no Buffer exists (Node's
// own is left alone, so the unit tests use the real one).
import { fromBase64, toBase64 } from "./base64";

export class ByteBuffer extends Uint8Array {
  // Arrays made from one (subarray, slice, map) are plain Uint8Arrays, as the SDK needs no more.
  static get [Symbol.species](): Uint8ArrayConstructor {
    return Uint8Array;
  }

  // Node's signature is as loose: a string with its encoding, or bytes of any kind.
  static override from(source: any, encoding?: any): ByteBuffer {
    if (typeof source === "string") {
      return new ByteBuffer(encoding === "base64" ? fromBase64(source) : new TextEncoder().encode(source));
    }
    if (source instanceof ArrayBuffer) return new ByteBuffer(new Uint8Array(source));
    return new ByteBuffer(Uint8Array.from(source as ArrayLike<number>));
  }

  static isBuffer(value: unknown): value is ByteBuffer {
    return value instanceof ByteBuffer;
  }

  // Uint8Array's toString lists the numbers; the SDK asks Buffer's: base64, or UTF-8 text.
  override toString(encoding?: string): string {
    if (encoding === "base64") return toBase64(this);
    return new TextDecoder().decode(this);
  }
}

export function installBuffer(scope: { Buffer?: unknown } = globalThis as { Buffer?: unknown }): void {
  if (scope.Buffer === undefined) scope.Buffer = ByteBuffer;
}

installBuffer();
