// Files for a message, as the composer and the new-task form show them: a real file input
// (visually hidden, so its label can look like a button; it still takes the focus, and its
// label shows the focus ring) labelled "Attach files", the files chosen for the message, each
// with its type, size and a remove button, and a note on any the model cannot read (the
// gateway keeps it and names it to the model). Each file is checked (chosen.ts, attachments.ts)
// before it is listed; the form using these says why one was refused.
import { FILE_BYTES, READ, size, unread } from "../attachments";
import type { Attached } from "../chosen";

export type { Attached } from "../chosen";

/** The "Attach files" input. ``id`` is the input's (its label's ``for``); ``describedBy`` the
 * ids of its hint and of the alert that says why a file was refused. */
export function FilePicker({
  id,
  describedBy,
  enabled,
  onAdd,
}: {
  id: string;
  describedBy: string;
  enabled: boolean;
  onAdd: (files: File[]) => void;
}) {
  return (
    <span className="file-pick">
      <input
        id={id}
        className="visually-hidden file-input"
        type="file"
        multiple
        disabled={!enabled}
        aria-describedby={describedBy}
        onChange={(event) => {
          const chosen = Array.from(event.currentTarget.files ?? []);
          // Emptied, so the same file can be chosen again after it was removed or refused.
          event.currentTarget.value = "";
          if (chosen.length) onAdd(chosen);
        }}
      />
      <label htmlFor={id} className="button file-label">
        Attach files
      </label>
    </span>
  );
}

/** What a file may be, said under the input (``id``: the input's ``aria-describedby`` names it). */
export function FilesHint({ id, lead = "" }: { id: string; lead?: string }) {
  return (
    <p id={id} className="help">
      {lead}Files of up to {size(FILE_BYTES)} each; the model reads {READ}.
    </p>
  );
}

/** The files chosen for the message; removing one puts the focus back on "Attach files" (the
 * input ``inputId``). */
export function AttachedFiles({
  files,
  inputId,
  onRemove,
}: {
  files: readonly Attached[];
  inputId: string;
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
              document.getElementById(inputId)?.focus();
            }}
          >
            Remove
          </button>
        </li>
      ))}
    </ul>
  );
}
