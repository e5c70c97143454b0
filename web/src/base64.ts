// Bytes as base64 and back, in a browser (atob and btoa work on "binary strings", one char a
// byte) and under Node alike: the attachments the composer sends, the images it previews and the
// artifacts it offers for download all pass through here.

/** Characters per btoa call: String.fromCharCode takes its bytes as arguments, and a call with
 * hundreds of thousands of them overflows the stack. */
const SLICE = 0x8000;

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += SLICE) {
    binary += String.fromCharCode(...bytes.subarray(at, at + SLICE));
  }
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/[\s]/g, ""));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** How long ``size`` bytes are as base64: what a file counts toward a message's bound. */
export function base64Length(size: number): number {
  return 4 * Math.ceil(size / 3);
}
