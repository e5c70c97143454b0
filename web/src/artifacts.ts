// A task's artifacts as the page shows them, folded from what the gateway sends: a pure module.
//
// A Task (GetTask, the first event of a stream) carries each artifact whole. A stream sends an
// artifact update per new chunk, before the status update of the change that indexed it:
// `append` adds the chunk's parts to the artifact, otherwise the update replaces it (a model
// that published it again, or a resumed stream sending each changed artifact whole);
// `lastChunk` false says more of it is coming. The harness never takes an artifact away, so a
// Task that lacks one the page has (a send's stream opens with the task as written) keeps it.
import type { Artifact, Part, TaskArtifactUpdateEvent } from "@a2a-js/sdk";

export interface ArtifactView {
  artifactId: string;
  name: string;
  description: string;
  parts: Part[];
  /** The last update said more chunks follow. */
  receiving: boolean;
}

function viewOf(artifact: Artifact, receiving = false): ArtifactView {
  return {
    artifactId: artifact.artifactId,
    name: artifact.name || artifact.artifactId,
    description: artifact.description,
    parts: artifact.parts,
    receiving,
  };
}

/** ``list`` with a Task's artifacts taken as they are (whole), each in its place (a new one
 * last), and those the Task lacks kept. An artifact the page already has as the Task has it
 * keeps its object, so what the page made of it (an image's data: URL, a download's object
 * URL) is not made again at each re-read. */
export function takeArtifacts(list: readonly ArtifactView[], artifacts: readonly Artifact[]): ArtifactView[] {
  let out = [...list];
  for (const artifact of artifacts) {
    const had = out.find((a) => a.artifactId === artifact.artifactId);
    if (had && !had.receiving && sameArtifact(had, artifact)) continue;
    out = put(out, viewOf(artifact));
  }
  return out;
}

function sameArtifact(had: ArtifactView, artifact: Artifact): boolean {
  return (
    had.name === (artifact.name || artifact.artifactId) &&
    had.description === artifact.description &&
    had.parts.length === artifact.parts.length &&
    had.parts.every((part, i) => samePart(part, artifact.parts[i]))
  );
}

function samePart(a: Part, b: Part | undefined): boolean {
  if (!b || a.mediaType !== b.mediaType || a.filename !== b.filename) return false;
  const x = a.content;
  const y = b.content;
  if (x?.$case !== y?.$case) return false;
  if (x?.$case === "raw" && y?.$case === "raw") return sameBytes(x.value as Uint8Array, y.value as Uint8Array);
  if (x?.$case === "data" && y?.$case === "data") return JSON.stringify(x.value) === JSON.stringify(y.value);
  return x?.value === y?.value;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** ``list`` with one artifact update folded in. */
export function takeArtifactUpdate(list: readonly ArtifactView[], event: TaskArtifactUpdateEvent): ArtifactView[] {
  const artifact = event.artifact;
  if (!artifact) return [...list];
  const existing = list.find((a) => a.artifactId === artifact.artifactId);
  const receiving = !event.lastChunk;
  if (event.append && existing) {
    return put([...list], {
      ...existing,
      name: artifact.name || existing.name,
      description: artifact.description || existing.description,
      parts: [...existing.parts, ...artifact.parts],
      receiving,
    });
  }
  // Not an append, or an append to an artifact this page has not seen (its first chunks were
  // missed): what it carries is what the page knows, and the next read brings it whole.
  return put([...list], viewOf(artifact, receiving));
}

function put(list: ArtifactView[], artifact: ArtifactView): ArtifactView[] {
  const at = list.findIndex((a) => a.artifactId === artifact.artifactId);
  if (at < 0) return [...list, artifact];
  const out = [...list];
  out[at] = artifact;
  return out;
}
