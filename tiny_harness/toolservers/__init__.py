"""Tools from MCP servers: the client side of the Model Context Protocol, over the official
``mcp`` SDK, turned into the harness's own :class:`~tiny_harness.core.tools.Tool` values.

It knows nothing of Kubernetes: the operator resolves a ``HarnessToolServer`` (its Secret
headers, its limits) into an :class:`~tiny_harness.toolservers.client.Endpoint` and hands it
here. Below the operator, beside ``kube`` and ``models``; ``core`` never imports it.
"""
