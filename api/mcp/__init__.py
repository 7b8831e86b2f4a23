"""The agent tool server: the Model Context Protocol over streamable HTTP (JSON responses only) at
POST /mcp. `protocol` speaks JSON-RPC and MCP, `tools` holds the four tools, `views` is the HTTP end."""
