"""A mailbox's messages as people and programs use them (REST, MCP, webmail): one service over the store."""
