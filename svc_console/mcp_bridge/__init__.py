"""`svc-console mcp`: the console as the MCP server an agent's host launches. It speaks to the
console's agents' socket as one agent and holds no credential of the marketplace."""
