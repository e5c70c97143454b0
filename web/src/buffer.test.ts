import { describe, expect, it } from "vitest";
import { Part } from "@a2a-js/sdk";
import { ByteBuffer, installBuffer } from "./buffer";
import { base64Length, fromBase64, toBase64 } from "./base64";

describe("base64", () => {
  it("round-trips every byte, and a file larger than one btoa slice", () => {
    const bytes = Uint8Array.from({ length: 40_000 }, (_, i) => (i * 7) % 256);
    expect(fromBase64(toBase64(bytes))).toEqual(bytes);
    expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString("base64"));
    expect(base64Length(bytes.length)).toBe(toBase64(bytes).length);
    expect(base64Length(0)).toBe(0);
  });
});

describe("the Buffer the SDK is given in a browser", () => {
  it("does what the SDK asks of Node's: base64 in, base64 out, bytes copied", () => {
    const png = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0, 255);
    const b64 = Buffer.from(png).toString("base64");
    const decoded = ByteBuffer.from(b64, "base64");
    expect(Array.from(decoded)).toEqual(Array.from(png));
    expect(ByteBuffer.from(png).toString("base64")).toBe(b64);
    expect(ByteBuffer.isBuffer(decoded)).toBe(true);
    expect(ByteBuffer.isBuffer(png)).toBe(false);
    expect(ByteBuffer.from("héllo").toString()).toBe("héllo");
    expect(decoded.subarray(1, 3)).toEqual(Uint8Array.of(0x50, 0x4e));
  });

  it("is installed only where there is none", () => {
    const browser: { Buffer?: unknown } = {};
    installBuffer(browser);
    expect(browser.Buffer).toBe(ByteBuffer);
    const node = { Buffer };
    installBuffer(node);
    expect(node.Buffer).toBe(Buffer);
  });

  it("carries a file part through the SDK's JSON in both directions", () => {
    const scope = globalThis as { Buffer?: unknown };
    const real = scope.Buffer;
    scope.Buffer = undefined;
    installBuffer();
    try {
      const json = { raw: "iVBORw==", mediaType: "image/png", filename: "chart.png" };
      const part = Part.fromJSON(json);
      expect(part.content?.$case).toBe("raw");
      expect(Array.from(part.content?.value as Uint8Array)).toEqual([0x89, 0x50, 0x4e, 0x47]);
      expect(Part.toJSON(part)).toMatchObject(json);
    } finally {
      scope.Buffer = real;
    }
  });
});
