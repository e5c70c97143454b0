import { describe, expect, it } from "vitest";
import { FILE_BYTES } from "./attachments";
import { attach, outgoing, UNREADABLE, type Attached } from "./chosen";

const keys = () => {
  let n = 0;
  return () => `k${++n}`;
};

describe("the files a message carries, as the composer and the new-task form take them", () => {
  it("takes picked files with a key and a media type (from the name when none is given)", () => {
    const { files, problem } = attach(
      [],
      [new File(["# notes"], "notes.md"), new File([new Uint8Array(4)], "chart.png", { type: "image/png" })],
      "",
      keys(),
    );
    expect(problem).toBeNull();
    expect(files.map(({ key, name, mediaType, size }) => ({ key, name, mediaType, size }))).toEqual([
      { key: "k1", name: "notes.md", mediaType: "text/markdown", size: 7 },
      { key: "k2", name: "chart.png", mediaType: "image/png", size: 4 },
    ]);
  });

  it("keeps what was chosen and says in one sentence why each refused file was left out", () => {
    const first = attach([], [new File(["a"], "a.txt", { type: "text/plain" })], "", keys()).files;
    const { files, problem } = attach(
      first,
      [new File([new Uint8Array(FILE_BYTES + 1)], "big.png", { type: "image/png" }), new File(["b"], "b.txt")],
      "",
      keys(),
    );
    expect(files.map((f) => f.name)).toEqual(["a.txt", "b.txt"]);
    expect(problem).toMatch(/^big\.png is too large to send: 192 KiB, and a file may be at most 192 KiB/);
  });

  it("counts the text typed so far against the message's bound", () => {
    const full = new File([new Uint8Array(FILE_BYTES)], "full.png", { type: "image/png" });
    expect(attach([], [full], "").problem).toBeNull();
    expect(attach([], [full], "a goal").problem).toMatch(/^This message would carry 256 KiB/);
  });

  it("reads the files' bytes in the order chosen, with their names and types", async () => {
    const { files } = attach(
      [],
      [new File([new Uint8Array([137, 80, 78, 71])], "chart.png", { type: "image/png" }), new File(["hi"], "hi.txt")],
      "",
      keys(),
    );
    expect(await outgoing(files, "What does it show?")).toEqual({
      files: [
        { name: "chart.png", mediaType: "image/png", bytes: new Uint8Array([137, 80, 78, 71]) },
        { name: "hi.txt", mediaType: "text/plain", bytes: new TextEncoder().encode("hi") },
      ],
      problem: null,
    });
    expect(await outgoing([], "")).toEqual({ files: [], problem: null });
  });

  it("sends nothing when the message is past its bound or a file can no longer be read", async () => {
    const half = { key: "a", name: "a.pdf", mediaType: "application/pdf", size: 100 * 1024, file: new Blob() };
    const both = await outgoing([half, { ...half, key: "b", name: "b.pdf" }], "");
    expect(both.files).toBeNull();
    expect(both.problem).toMatch(/^This message would carry 266\.7 KiB/);
    const gone: Attached = {
      key: "c",
      name: "gone.txt",
      mediaType: "text/plain",
      size: 3,
      file: { arrayBuffer: () => Promise.reject(new Error("NotReadableError")) } as unknown as Blob,
    };
    expect(await outgoing([gone], "")).toEqual({ files: null, problem: UNREADABLE });
  });
});
