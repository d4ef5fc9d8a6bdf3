"""The MCP server: CSTP's 17 tools and decigraph's own, over streamable HTTP at ``/mcp``
(:mod:`.http`, behind the bearer tokens) and stdio (:mod:`.stdio`, ``decigraph mcp``).

Every tool call is a ``cstp.*`` JSON-RPC call through the service's own dispatcher
(:mod:`.tools` holds the table: schemas, argument mapping, result shapes)."""
