import type { AgentCard } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { accepted, commandsOf, offered, usage } from "./commands";
import { COMMANDS_EXT_URI } from "./wire";

const card = {
  capabilities: {
    extensions: [
      {
        uri: COMMANDS_EXT_URI,
        description: "",
        required: false,
        params: {
          commands: [
            { name: "model", description: "Show the model", argument_hint: "[<model>]" },
            { name: "status", description: "Show the state", argument_hint: "" },
            { name: "sub-task", description: "Start a sub-task", argument_hint: "<description>" },
            { name: "Bad Name", description: "not a command name" },
          ],
        },
      },
    ],
  },
} as unknown as AgentCard;

describe("the card's commands", () => {
  const commands = commandsOf(card);

  it("are read from the commands extension, names checked", () => {
    expect(commands.map(usage)).toEqual(["/model [<model>]", "/status", "/sub-task <description>"]);
  });

  it("are all offered for a lone slash, then those the typed name begins", () => {
    expect(offered(commands, "/").map((c) => c.name)).toEqual(["model", "status", "sub-task"]);
    expect(offered(commands, "/s").map((c) => c.name)).toEqual(["status", "sub-task"]);
    expect(offered(commands, "/x")).toEqual([]);
  });

  it("are not offered once a name is typed out, an argument begun, or for plain text", () => {
    expect(offered(commands, "/status")).toEqual([]);
    expect(offered(commands, "/sub-task Draft")).toEqual([]);
    expect(offered(commands, "hello /")).toEqual([]);
  });

  it("fill the composer with the name and, when it takes arguments, a space", () => {
    expect(commands.map(accepted)).toEqual(["/model ", "/status", "/sub-task "]);
  });

  it("are none for a card without the extension", () => {
    expect(commandsOf({ capabilities: { extensions: [] } } as unknown as AgentCard)).toEqual([]);
  });
});
