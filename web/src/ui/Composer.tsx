// The composer: what you type goes to the task as a message. Typing "/" opens a listbox of the
// card's commands, as a WAI-ARIA combobox (downshift's useCombobox): Up and Down move, Tab or
// Enter takes the command, Escape closes the list; with the list closed, Enter sends.
//
// "Attach files" adds files to the next message (FilePicker.tsx), each checked first as the
// gateway would check it (chosen.ts, attachments.ts: the new-task form checks the same way): a
// file or message past its bound is refused here, saying why, and nothing is sent; a kind the
// model cannot read is sent, and said so. The files go as `raw` parts with their media type and
// name, after the text.
//
// A message shows at once; when the gateway refuses it before writing anything (too large,
// too many requests, a file it does not take after all) it is taken back out, and its text and
// files return to the composer with the gateway's words.
import { useCombobox, type UseComboboxState, type UseComboboxStateChangeOptions } from "downshift";
import { useState, type FormEvent, type KeyboardEvent } from "react";
import { attach as attachTo, outgoing, type Attached } from "../chosen";
import type { HarnessClient } from "../client";
import { accepted, offered, usage, type CommandSpec } from "../commands";
import { explain } from "../errors";
import { take, takeMessage, takeTask, withoutMessage } from "../fold";
import type { ComposerWords } from "../question";
import type { Views } from "../views";
import { AttachedFiles, FilePicker, FilesHint } from "./FilePicker";

const FILES_INPUT = "composer-files";

const { InputBlur, InputKeyDownEscape } = useCombobox.stateChangeTypes;

/** Downshift's choices, less two that would lose what was typed: Escape on a closed list
 * clears the input, and leaving the input takes the highlighted command. */
function keepTyped(
  state: UseComboboxState<CommandSpec>,
  { type, changes }: UseComboboxStateChangeOptions<CommandSpec>,
): Partial<UseComboboxState<CommandSpec>> {
  if (type === InputKeyDownEscape || type === InputBlur) {
    return { ...changes, inputValue: state.inputValue, selectedItem: state.selectedItem };
  }
  return changes;
}

export function Composer({
  client,
  views,
  taskId,
  enabled,
  words,
}: {
  client: HarnessClient;
  views: Views;
  taskId: string;
  enabled: boolean;
  /** Its label, placeholder, hint and button: a message, an answer, or an ended task's. */
  words: ComposerWords;
}) {
  const [text, setText] = useState("");
  const [dismissed, setDismissed] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [sending, setSending] = useState(0);
  const [files, setFiles] = useState<Attached[]>([]);
  const commands = offered(client.commands, text);
  const open = enabled && commands.length > 0 && !dismissed;

  const combobox = useCombobox<CommandSpec>({
    items: commands,
    inputValue: text,
    selectedItem: null,
    isOpen: open,
    defaultHighlightedIndex: 0,
    itemToString: (command) => (command ? accepted(command) : ""),
    inputId: "composer-input",
    labelId: "composer-label",
    menuId: "composer-commands",
    getItemId: (index) => `command-${commands[index]?.name ?? index}`,
    stateReducer: keepTyped,
    // A command taken from the list (Enter, a click). Typing is taken by onChange below, in the
    // event itself: downshift calls this only after rendering, and a controlled input that
    // waits for that loses the keys typed meanwhile.
    onInputValueChange: ({ inputValue }) => {
      setText(inputValue ?? "");
      setDismissed(false);
    },
    onIsOpenChange: ({ isOpen }) => {
      if (!isOpen) setDismissed(true);
    },
  });

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key !== "Tab" || event.shiftKey || !open) return;
    const command = commands[Math.max(combobox.highlightedIndex, 0)];
    if (!command) return;
    event.preventDefault();
    setText(accepted(command));
  }

  function attach(picked: File[]) {
    const taken = attachTo(files, picked, text);
    setFiles(taken.files);
    setProblem(taken.problem);
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (open) return; // Enter on the list takes the command
    const body = text.trim();
    if ((!body && !files.length) || !enabled) return;
    const sent = files;
    const ready = await outgoing(sent, body);
    if (ready.problem !== null) {
      setProblem(ready.problem);
      return;
    }
    const { message, events } = client.send(body, { taskId }, ready.files);
    views.apply(taskId, (v) => takeMessage(v, message));
    setText("");
    setFiles([]);
    setProblem(null);
    setSending((n) => n + 1);
    let written = false;
    try {
      try {
        for await (const item of events) {
          written = true;
          views.apply(taskId, (v) => take(v, item, Date.now()));
        }
      } catch (error) {
        setProblem(explain(error));
        if (!written) {
          // Refused before anything was written: nothing was sent, so take it back.
          views.apply(taskId, (v) => withoutMessage(v, message.messageId));
          setText((now) => now || body);
          setFiles((now) => (now.length ? now : sent));
        }
        return;
      }
      // The message went through; this read only settles the view. A failure of it (too
      // many requests, say) is not the message's: the task's own stream brings the rest.
      const task = await client.task(taskId).catch(() => null);
      if (task) views.apply(taskId, (v) => takeTask(v, task, Date.now()));
    } finally {
      setSending((n) => n - 1);
    }
  }

  return (
    <form className="composer" onSubmit={submit} aria-label="Send a message">
      <label {...combobox.getLabelProps()} className="visually-hidden">
        {words.label}
      </label>
      <div className="composer-row">
        <div className="composer-field">
        <input
          {...combobox.getInputProps({
            onKeyDown,
            onChange: (event) => {
              setText(event.currentTarget.value);
              setDismissed(false);
              setProblem(null);
            },
            disabled: !enabled,
            placeholder: words.placeholder,
            autoComplete: "off",
            "aria-describedby": "composer-hint composer-problem",
          })}
        />
      <span id="composer-commands-label" className="visually-hidden">
        Commands
      </span>
      <ul
        {...combobox.getMenuProps({ "aria-labelledby": "composer-commands-label" })}
        className="commands"
        hidden={!open}
      >
        {open
          ? commands.map((command, index) => (
              <li
                key={command.name}
                className="command-option"
                {...combobox.getItemProps({ item: command, index })}
              >
                <span className="command-usage">{usage(command)}</span>
                <span className="command-about">{command.description}</span>
              </li>
            ))
          : null}
      </ul>
        </div>
        <FilePicker
          id={FILES_INPUT}
          describedBy="composer-files-hint composer-problem"
          enabled={enabled}
          onAdd={attach}
        />
        <button type="submit" className="primary" disabled={!enabled || (!text.trim() && !files.length) || open}>
          {sending ? "Sending…" : words.send}
        </button>
      </div>
      <AttachedFiles
        files={files}
        inputId={FILES_INPUT}
        onRemove={(key) => setFiles((now) => now.filter((f) => f.key !== key))}
      />
      <p id="composer-hint" className="help">
        {words.hint}
      </p>
      <FilesHint id="composer-files-hint" />
      <p id="composer-problem" className="problem" role="alert">
        {problem}
      </p>
    </form>
  );
}
