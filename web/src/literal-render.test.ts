// The web UI renders someone else's text as text: markup stays characters (React never
// parses a string as HTML), and control and bidi characters show as visible escapes. Rendered
// with react-dom/server, as the browser's first render would be.
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import { parts } from "./test/a2a";
import { Artifacts } from "./ui/Artifacts";

const HOSTILE = "\x1b[2J\x1b]52;c;cm0gLXJm\x07 report\u202efdp.exe";
const SHOWN = "\\x1b[2J\\x1b]52;c;cm0gLXJm\\x07 report\\u202efdp.exe";
const MARKUP = '<img src=x onerror="alert(1)"><b>bold</b>';

describe("an artifact from the model, rendered", () => {
  it("shows its name, description and text literally, markup and escapes as characters", () => {
    const html = renderToStaticMarkup(
      createElement(Artifacts, {
        artifacts: [
          {
            artifactId: "a1",
            name: `name ${HOSTILE}`,
            description: `about ${MARKUP}`,
            parts: [parts.text(`text ${MARKUP} ${HOSTILE}`)],
            receiving: false,
          },
        ],
      }),
    );
    expect(html).toContain(`name ${SHOWN}`);
    expect(html).toContain(`text &lt;img src=x onerror=&quot;alert(1)&quot;&gt;&lt;b&gt;bold&lt;/b&gt; ${SHOWN}`);
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<b>");
    expect(html).toContain(`Download name ${SHOWN}`);
    expect(html).toContain('download="name -[2J-]52;c;cm0gLXJm- report-fdp.exe.txt"');
    expect(html).not.toMatch(/[\x1b\x07\u202e]/);
  });
});
