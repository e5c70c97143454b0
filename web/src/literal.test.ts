import { describe, expect, it } from "vitest";

import { literal } from "./literal";

const HOSTILE = "\x1b[2J\x1b]52;c;cm0gLXJm\x07\x1b[31mSECURITY NOTICE\x1b[0m report\u202efdp.exe";
const SHOWN = "\\x1b[2J\\x1b]52;c;cm0gLXJm\\x07\\x1b[31mSECURITY NOTICE\\x1b[0m report\\u202efdp.exe";

function obeyable(text: string): string[] {
  return [...text].filter((c) => {
    const code = c.codePointAt(0) ?? 0;
    return (code < 0x20 && c !== "\n" && c !== "\t") || (code >= 0x7f && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
  });
}

describe("literal", () => {
  it("shows escape sequences and bidi overrides as visible escapes", () => {
    expect(literal(HOSTILE)).toBe(SHOWN);
    expect(obeyable(literal(HOSTILE))).toEqual([]);
  });

  it("escapes every C0 and C1 control, DEL and the bidi isolates, as kubectl harness does", () => {
    for (let code = 0; code < 0xa0; code++) {
      if (code >= 0x20 && code < 0x7f) continue;
      const shown = literal(`a${String.fromCharCode(code)}b`, false);
      expect(obeyable(shown)).toEqual([]);
    }
    expect(literal("\u2066x\u2069\u200e")).toBe("\\u2066x\\u2069\\u200e");
    expect(literal("a\rb")).toBe("a\\rb");
  });

  it("keeps newlines and tabs in text of several lines, and escapes them on one line", () => {
    expect(literal("one\n\ttwo")).toBe("one\n\ttwo");
    expect(literal("one\n\ttwo", false)).toBe("one\\n\\ttwo");
  });

  it("leaves ordinary text alone, markup and emoji included, and escaping twice changes nothing", () => {
    for (const text of ["<b>not bold</b> [bold]", "日本語", "emoji 👩‍💻 ok", "שלום"]) {
      expect(literal(text)).toBe(text);
    }
    expect(literal(literal(HOSTILE))).toBe(literal(HOSTILE));
  });

  it("escapes a lone surrogate but keeps a pair", () => {
    expect(literal("a\udcffb")).toBe("a\\udcffb");
    expect(literal("😀")).toBe("😀");
  });
});
