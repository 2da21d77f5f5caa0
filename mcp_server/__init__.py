"""MCP (Model Context Protocol) for Synapse: agents use their memory as tools.

- views.py     `POST /mcp`: streamable HTTP in JSON-response mode, Mind Key as Bearer token;
- protocol.py  JSON-RPC 2.0 framing and the MCP methods (initialize, tools/*, resources/*, ping);
- tools.py     the tools, each a thin adapter over the same services and selectors as the API;
- stdio.py     a stdlib-only bridge for stdio-only clients: `python -m mcp_server.stdio`.

Named `mcp_server`, not `mcp`, so it never shadows the official `mcp` package. This package
must stay importable without Django (stdio.py runs outside the server), so nothing here imports
Django at package level.
"""
