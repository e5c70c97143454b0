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
 * last), and those the Task lacks kept. */
export function takeArtifacts(list: readonly ArtifactView[], artifacts: readonly Artifact[]): ArtifactView[] {
  let out = [...list];
  for (const artifact of artifacts) out = put(out, viewOf(artifact));
  return out;
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
