// The /commands the agent card lists (its commands extension), and which of them the composer
// offers for what has been typed. A pure module.
import type { AgentCard } from "@a2a-js/sdk";
import { COMMANDS_EXT_URI } from "./wire";

export interface CommandSpec {
  name: string;
  description: string;
  argumentHint: string;
}

const NAME = /^[a-z][a-z0-9-]*$/;

/** The commands of the card's commands extension (none when it lists none). */
export function commandsOf(card: AgentCard): CommandSpec[] {
  const extension = card.capabilities?.extensions.find((e) => e.uri === COMMANDS_EXT_URI);
  const listed: unknown = extension?.params?.commands;
  if (!Array.isArray(listed)) return [];
  return listed.flatMap((raw: unknown) => {
    const c = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const name = typeof c.name === "string" ? c.name : "";
    if (!NAME.test(name)) return [];
    return [
      {
        name,
        description: typeof c.description === "string" ? c.description : "",
        argumentHint: typeof c.argument_hint === "string" ? c.argument_hint : "",
      },
    ];
  });
}

/** The commands to offer while the composer holds ``text``: while it is a slash and the start
 * of a name (no space yet), those whose name begins with what follows the slash. A name typed
 * out in full is not offered again, so Enter sends it. */
export function offered(commands: CommandSpec[], text: string): CommandSpec[] {
  const typed = /^\/([a-z0-9-]*)$/.exec(text);
  if (!typed) return [];
  const prefix = typed[1] ?? "";
  return commands.filter((c) => c.name.startsWith(prefix) && c.name !== prefix);
}

/** What the composer holds once ``command`` is chosen: its name and a space, ready for the
 * arguments (none for a command that takes none). */
export function accepted(command: CommandSpec): string {
  return `/${command.name}${command.argumentHint ? " " : ""}`;
}

export function usage(command: CommandSpec): string {
  return `/${command.name}${command.argumentHint ? ` ${command.argumentHint}` : ""}`;
}
