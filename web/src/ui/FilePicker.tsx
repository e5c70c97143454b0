// The composer's files: a real file input (visually hidden, so its label can look like a
// button; it still takes the focus, and its label shows the focus ring) labelled "Attach
// files", and the files chosen for the next message, each with its type, size and a remove
// button, and a note on any the model cannot read (the gateway keeps it and names it to the
// model). Each file is checked by attachments.ts before it is listed; the composer says why
// one was refused.
import { size, unread, type Chosen } from "../attachments";

export interface Attached extends Chosen {
  /** Tells two files of the same name apart in the list. */
  key: string;
  file: File;
}

const INPUT_ID = "composer-files";

export function FilePicker({ enabled, onAdd }: { enabled: boolean; onAdd: (files: File[]) => void }) {
  return (
    <span className="file-pick">
      <input
        id={INPUT_ID}
        className="visually-hidden file-input"
        type="file"
        multiple
        disabled={!enabled}
        aria-describedby="composer-files-hint composer-problem"
        onChange={(event) => {
          const chosen = Array.from(event.currentTarget.files ?? []);
          // Emptied, so the same file can be chosen again after it was removed or refused.
          event.currentTarget.value = "";
          if (chosen.length) onAdd(chosen);
        }}
      />
      <label htmlFor={INPUT_ID} className="button file-label">
        Attach files
      </label>
    </span>
  );
}

/** The files chosen for the next message; removing one puts the focus back on "Attach files". */
export function AttachedFiles({
  files,
  onRemove,
}: {
  files: readonly Attached[];
  onRemove: (key: string) => void;
}) {
  if (!files.length) return null;
  return (
    <ul className="attached" aria-label="Files to send">
      {files.map((f) => (
        <li key={f.key}>
          <span className="file-name">{f.name}</span>
          <span className="muted">
            {f.mediaType} · {size(f.size)}
          </span>
          {unread(f) ? <span className="note">Not read by the model: {unread(f)}.</span> : null}
          <button
            type="button"
            className="ghost"
            aria-label={`Remove ${f.name}`}
            onClick={() => {
              onRemove(f.key);
              document.getElementById(INPUT_ID)?.focus();
            }}
          >
            Remove
          </button>
        </li>
      ))}
    </ul>
  );
}
