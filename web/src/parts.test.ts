import { describe, expect, it } from "vitest";
import { Role } from "@a2a-js/sdk";
import { emptyView, takeMessage } from "./fold";
import { artifactSize, content, downloadOf, fileDownload, filesOf, previewOf, safeName, SHOWN_CHARS, shownPart } from "./parts";
import { artifact, message, parts } from "./test/a2a";

const PNG = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255);
const utf8 = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (text: string) => new TextEncoder().encode(text);

describe("what a part shows as, by its kind and media type", () => {
  it("shows text as text, whatever markup it holds", () => {
    expect(shownPart(parts.text("<b>bold</b> & **strong**"))).toEqual({
      kind: "text",
      text: "<b>bold</b> & **strong**",
      cut: false,
    });
    expect(shownPart(parts.file(bytes("<script>x</script>"), "text/html", "page.html"))).toEqual({
      kind: "text",
      text: "<script>x</script>",
      cut: false,
    });
  });

  it("pretty-prints JSON, a data part or a JSON file", () => {
    expect(shownPart(parts.data({ rows: 3, names: ["a"] }))).toEqual({
      kind: "json",
      text: '{\n  "rows": 3,\n  "names": [\n    "a"\n  ]\n}',
      cut: false,
    });
    expect(shownPart(parts.file(bytes('{"a":1}'), "application/json", "a.json"))).toMatchObject({
      kind: "json",
      text: '{\n  "a": 1\n}',
    });
    expect(shownPart(parts.file(bytes("{broken"), "application/json", "b.json"))).toMatchObject({
      kind: "text",
      text: "{broken",
    });
  });

  it("shows the image kinds the harness takes inline from their bytes, and no other", () => {
    const shown = shownPart(parts.file(PNG, "image/png", "chart.png"));
    expect(shown).toEqual({
      kind: "image",
      src: `data:image/png;base64,${Buffer.from(PNG).toString("base64")}`,
      name: "chart.png",
      mediaType: "image/png",
      size: PNG.length,
    });
    expect(shownPart(parts.file(bytes("<svg onload=x>"), "image/svg+xml", "x.svg"))).toEqual({
      kind: "file",
      name: "x.svg",
      mediaType: "image/svg+xml",
      size: 14,
    });
    expect(shownPart(parts.file(bytes("%PDF"), "application/pdf", "spec.pdf")).kind).toBe("file");
    expect(shownPart(parts.file(PNG, "", "")).kind).toBe("file");
  });

  it("shows a long text in part", () => {
    const shown = shownPart(parts.text("x".repeat(SHOWN_CHARS + 5)));
    expect(shown).toMatchObject({ kind: "text", cut: true });
    expect(shown.kind === "text" && shown.text.length).toBe(SHOWN_CHARS);
  });
});

describe("an artifact's download", () => {
  it("gives a single file as its bytes under its own name", () => {
    const chart = artifact("chart", [parts.file(PNG, "image/png", "chart.png")]);
    expect(downloadOf(chart)).toEqual({ filename: "chart.png", mediaType: "image/png", bytes: PNG });
    const nameless = artifact("plot", [parts.file(PNG, "image/png", "")]);
    expect(downloadOf(nameless).filename).toBe("plot.png");
    expect(artifactSize(chart)).toBe(PNG.length);
  });

  it("gives one JSON object as <name>.json, pretty", () => {
    const got = downloadOf(artifact("figures", [parts.data({ rows: 3 })]));
    expect(got.filename).toBe("figures.json");
    expect(got.mediaType).toBe("application/json");
    expect(utf8(got.bytes)).toBe('{\n  "rows": 3\n}\n');
  });

  it("gives text as .txt, or .md when it is Markdown, with JSON parts as kubectl writes them", () => {
    const report = artifact("report", [parts.text("Sales"), parts.data({ rows: 3 }), parts.text("é end")]);
    const got = downloadOf(report);
    expect(got.filename).toBe("report.txt");
    expect(got.mediaType).toBe("text/plain;charset=utf-8");
    expect(utf8(got.bytes)).toBe('Sales\n{\n  "rows": 3\n}\né end');
    expect(artifactSize(report)).toBe(got.bytes.length);
    const notes = downloadOf(artifact("notes.md", [parts.text("# Notes", "text/markdown")]));
    expect(notes.filename).toBe("notes.md");
    expect(notes.mediaType).toBe("text/markdown;charset=utf-8");
  });

  it("gives files among other parts as kubectl's bytes, each file also on its own", () => {
    const mixed = artifact("bundle", [parts.text("see:"), parts.file(PNG, "image/png", "chart.png")]);
    const got = downloadOf(mixed);
    expect(got.filename).toBe("bundle.bin");
    expect(got.bytes).toEqual(new Uint8Array([...bytes("see:"), ...PNG]));
    expect(fileDownload(mixed.parts[1]!, "bundle")).toEqual({ filename: "chart.png", mediaType: "image/png", bytes: PNG });
    expect(fileDownload(mixed.parts[0]!, "bundle")).toBeNull();
  });

  it("makes names a file system takes", () => {
    expect(safeName("../etc/passwd")).toBe("etc-passwd");
    expect(safeName("a:b*c?.txt")).toBe("a-b-c-.txt");
    expect(safeName("...")).toBe("artifact");
    expect(downloadOf(artifact("q3/report", [parts.text("x")])).filename).toBe("q3-report.txt");
    expect(utf8(content([parts.data({ a: 1 }), parts.data({ b: 2 })]))).toBe('{\n  "a": 1\n}\n{\n  "b": 2\n}\n');
  });
});

describe("a message's files in the conversation", () => {
  it("lists them under the text, an image with a preview", () => {
    const sent = message("m1", "What is in these?", Role.ROLE_USER);
    sent.parts.push(parts.file(PNG, "image/png", "chart.png"), parts.file(bytes("hi"), "text/plain", "notes.txt"));
    const [line] = takeMessage(emptyView("t1", "alice"), sent).lines;
    expect(line?.text).toBe("What is in these?");
    expect(line?.files).toEqual([
      { name: "chart.png", mediaType: "image/png", size: PNG.length, bytes: PNG, url: null },
      { name: "notes.txt", mediaType: "text/plain", size: 2, bytes: bytes("hi"), url: null },
    ]);
    expect(line?.files.map(previewOf)).toEqual([`data:image/png;base64,${Buffer.from(PNG).toString("base64")}`, null]);
  });

  it("shows a message of files alone, and a file at a URL by its link", () => {
    const sent = message("m2", "", Role.ROLE_USER);
    sent.parts = [
      { content: { $case: "url", value: "https://example.com/spec.pdf" }, metadata: undefined, filename: "spec.pdf", mediaType: "application/pdf" },
    ];
    const [line] = takeMessage(emptyView("t1", "alice"), sent).lines;
    expect(line?.text).toBe("");
    expect(filesOf(sent.parts)).toEqual([
      { name: "spec.pdf", mediaType: "application/pdf", size: null, bytes: null, url: "https://example.com/spec.pdf" },
    ]);
    expect(line?.files).toHaveLength(1);
  });
});
