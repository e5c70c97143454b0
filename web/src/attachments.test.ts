import { describe, expect, it } from "vitest";
import {
  choose,
  FILE_BYTES,
  kindOf,
  MESSAGE_BYTES,
  mediaTypeOf,
  messageBytes,
  refuseFile,
  refuseMessage,
  size,
  unread,
  type Chosen,
} from "./attachments";

const file = (name: string, mediaType: string, bytes: number): Chosen => ({ name, mediaType, size: bytes });

describe("the files the composer takes", () => {
  it("has the gateway's bounds: 256 KiB a message, so 192 KiB a file (its base64 fills it)", () => {
    expect(MESSAGE_BYTES).toBe(262_144);
    expect(FILE_BYTES).toBe(196_608);
    expect(messageBytes([file("a.png", "image/png", FILE_BYTES)], "")).toBe(MESSAGE_BYTES);
  });

  it("knows the kinds the gateway takes, parameters and case aside", () => {
    expect(kindOf("image/png")).toBe("image");
    expect(kindOf("IMAGE/JPEG")).toBe("image");
    expect(kindOf("image/webp")).toBe("image");
    expect(kindOf("application/pdf")).toBe("pdf");
    expect(kindOf("text/markdown; charset=utf-8")).toBe("text");
    expect(kindOf("application/json")).toBe("text");
    expect(kindOf("application/x-yaml")).toBe("text");
    expect(kindOf("image/svg+xml")).toBeNull();
    expect(kindOf("application/zip")).toBeNull();
    expect(kindOf("")).toBeNull();
  });

  it("names a file's type by its name when the browser gives none", () => {
    expect(mediaTypeOf("notes.md", "")).toBe("text/markdown");
    expect(mediaTypeOf("values.YML", "")).toBe("application/yaml");
    expect(mediaTypeOf("chart.png", "image/png")).toBe("image/png");
    expect(mediaTypeOf("Makefile", "")).toBe("application/octet-stream");
  });

  it("takes any kind, and says when the model cannot read it", () => {
    expect(refuseFile(file("site.zip", "application/zip", 10))).toBeNull();
    expect(unread(file("site.zip", "application/zip", 10))).toBe("kept with the task, and the model told only its name");
    expect(unread(file("chart.png", "image/png", 10))).toBeNull();
    expect(unread(file("notes.md", "text/markdown", 10))).toBeNull();
  });

  it("refuses a file past 192 KiB, saying its size and the bound", () => {
    expect(refuseFile(file("chart.png", "image/png", FILE_BYTES))).toBeNull();
    expect(refuseFile(file("big.png", "image/png", 200 * 1024))).toBe(
      "big.png is too large to send: 200 KiB, and a file may be at most 192 KiB (it travels " +
        "as base64, a third larger, in a message of at most 256 KiB). Send a smaller file.",
    );
  });

  it("refuses files that fit alone but not together, counting the text too", () => {
    const half = file("a.pdf", "application/pdf", 100 * 1024);
    expect(refuseMessage([half], "")).toBeNull();
    expect(refuseMessage([half, { ...half, name: "b.pdf" }], "")).toMatch(
      /^This message would carry 266\.7 KiB \(a file counts as its base64.*at most 256 KiB/,
    );
    const full = file("a.png", "image/png", FILE_BYTES);
    expect(refuseMessage([full], "")).toBeNull();
    expect(refuseMessage([full], "é")).not.toBeNull(); // two bytes in UTF-8
  });

  it("takes what fits and leaves out what does not, each refusal said", () => {
    const kept = file("notes.txt", "text/plain", 10);
    const { chosen, refused } = choose(
      [kept],
      [file("chart.png", "image/png", 2048), file("big.png", "image/png", FILE_BYTES + 1), file("site.zip", "application/zip", 1)],
    );
    expect(chosen.map((f) => f.name)).toEqual(["notes.txt", "chart.png", "site.zip"]);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^big\.png is too large to send/);
  });

  it("says sizes as people read them", () => {
    expect(size(812)).toBe("812 B");
    expect(size(1536)).toBe("1.5 KiB");
    expect(size(FILE_BYTES)).toBe("192 KiB");
    expect(size(1.25 * 1024 * 1024)).toBe("1.3 MiB");
  });
});
