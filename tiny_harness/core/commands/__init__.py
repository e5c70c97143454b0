"""Slash commands: ``/model``, ``/effort``, ``/sub-task``, ``/status`` and any a plugin adds.

A participant's message whose only part is ``/<name> <arguments>`` with a registered name is a
command. The operator answers it without calling the model: the command runs through the
``command.invoked`` hook operation (pre, in, post chains of :mod:`.hooks`), and its handler
returns *intents* (a reply, new task settings, a sub-task to spawn) that the operator
applies itself. A handler never holds a client or a store, so it can do no more than its result
says.

The package is split by idea (hooks and plugins are in it too, so that nothing outside it
imports into it and back), and this file imports nothing so that :mod:`.hooks` can use
:mod:`.command_errors` without an import cycle:

- :mod:`.command_errors`: ``CommandError``, ``HookAbort``, ``HookError``, ``PluginError``;
- :mod:`.context`: what a handler sees (``TaskSnapshot``, the ``command.invoked`` contexts) and
  returns (``CommandResult``);
- :mod:`.parse`: ``parse_command``, which tells a command from an ordinary message;
- :mod:`.registry`: ``CommandRegistry``, filled at start-up and frozen;
- :mod:`.roles`: the built-in role check, a pre executor;
- :mod:`.builtins`: the four built-in commands;
- :mod:`.run`: ``run_command``, what the operator calls for each command;
- :mod:`.setup`: ``build_command_registry``, built-ins + code + plugins in one call;
- :mod:`.plugin_schemas`: the JSON Schemas of the plugin files under ``docs/plugins/``.
"""
