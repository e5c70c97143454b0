// What the task has published (the model's publish_artifact), below the conversation: each
// artifact with its name, description and size, a download link, and its parts as parts.ts
// says they show: text as text, JSON pretty-printed, images inline from their bytes, any other
// file by its name, type and size with a link of its own. Long text sits in a bounded,
// scrollable region reached by Tab. The list follows the task's streams (artifact updates)
// and reads (GetTask), folded by artifacts.ts.
import type { Part } from "@a2a-js/sdk";
import { useId, useMemo } from "react";
import { literal } from "../literal";
import { size } from "../attachments";
import type { ArtifactView } from "../artifacts";
import { artifactSize, downloadOf, fileDownload, shownPart, type Shown } from "../parts";
import { DownloadLink } from "./Download";

export function Artifacts({ artifacts }: { artifacts: readonly ArtifactView[] }) {
  if (!artifacts.length) return null;
  return (
    <section className="artifacts" aria-labelledby="artifacts-title">
      <h2 id="artifacts-title">Artifacts</h2>
      <ol className="artifact-list">
        {artifacts.map((artifact) => (
          <li key={artifact.artifactId}>
            <ArtifactCard artifact={artifact} />
          </li>
        ))}
      </ol>
    </section>
  );
}

function ArtifactCard({ artifact }: { artifact: ArtifactView }) {
  const id = useId();
  const download = useMemo(() => downloadOf(artifact), [artifact]);
  const shown = useMemo(() => artifact.parts.map(shownPart), [artifact.parts]);
  const several = artifact.parts.length > 1;
  return (
    <article className="artifact" aria-labelledby={`${id}-name`}>
      <h3 id={`${id}-name`}>{literal(artifact.name, false)}</h3>
      {artifact.description ? <p className="artifact-description">{literal(artifact.description)}</p> : null}
      <p className="muted artifact-facts">
        {size(artifactSize(artifact))}
        {several ? ` · ${artifact.parts.length} parts` : null}
        {artifact.receiving ? " · more is on its way…" : null}
      </p>
      <DownloadLink download={download} what={artifact.name} />
      {shown.map((item, index) => (
        <PartView
          key={index}
          shown={item}
          part={artifact.parts[index]}
          label={several ? `${artifact.name}, part ${index + 1}` : artifact.name}
          artifactName={artifact.name}
          own={several}
        />
      ))}
    </article>
  );
}

function PartView({
  shown,
  part,
  label,
  artifactName,
  own,
}: {
  shown: Shown;
  part: Part | undefined;
  label: string;
  artifactName: string;
  /** The part has a download link of its own (a file among several parts). */
  own: boolean;
}) {
  switch (shown.kind) {
    case "text":
    case "json": {
      const what = shown.kind === "json" ? "JSON" : "Text";
      return (
        <>
          <pre className={`artifact-body ${shown.kind}`} role="region" aria-label={`${what} of ${literal(label, false)}`} tabIndex={0}>
            {literal(shown.text)}
          </pre>
          {shown.cut ? <p className="help">Shown in part: the download has all of it.</p> : null}
        </>
      );
    }
    case "image":
      return (
        <figure className="artifact-image">
          <img src={shown.src} alt={`${literal(shown.name, false)}, an image of ${literal(label, false)}`} />
          <figcaption className="muted">
            {shown.name} · {shown.mediaType} · {size(shown.size)}
          </figcaption>
          {own ? <PartDownload part={part} artifactName={artifactName} what={shown.name} /> : null}
        </figure>
      );
    case "file":
      return (
        <p className="artifact-file">
          <span className="file-name">{literal(shown.name, false)}</span>{" "}
          <span className="muted">
            {shown.mediaType} · {size(shown.size)}
          </span>
          {own ? (
            <>
              {" "}
              <PartDownload part={part} artifactName={artifactName} what={shown.name} />
            </>
          ) : null}
        </p>
      );
    case "link":
      return (
        <p className="artifact-file">
          {/^https?:\/\//i.test(shown.url) ? (
            <a href={shown.url} rel="noopener noreferrer" target="_blank">
              {literal(shown.name, false)}
            </a>
          ) : (
            <span className="file-name">{literal(shown.url, false)}</span>
          )}{" "}
          {shown.mediaType ? <span className="muted">{shown.mediaType}</span> : null}
        </p>
      );
  }
}

function PartDownload({ part, artifactName, what }: { part: Part | undefined; artifactName: string; what: string }) {
  const download = useMemo(() => (part ? fileDownload(part, artifactName) : null), [part, artifactName]);
  return download ? <DownloadLink download={download} what={what} /> : null;
}
