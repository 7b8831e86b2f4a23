"""Drives POST /mcp with the official MCP Python SDK 1.x and prints what it saw as one JSON object.

Runs in the 1.x virtualenv (.venv/mcp1, made by `make setup-test`), started by
api/tests/test_mcp_sdk.py: argv[1] is a JSON object {url, key, read_only_key, calls: [[name, args]]}.
"""
import asyncio
import importlib.metadata
import json
import sys

import httpx
from mcp import ClientSession, McpError
from mcp.client.streamable_http import streamable_http_client


async def _session(url: str, key: str | None, work):
    statuses: list[int] = []

    async def record(response):
        statuses.append(response.status_code)

    headers = {"X-API-Key": key} if key else {}
    async with httpx.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                return await work(session), statuses


def _tool_result(result) -> dict:
    return {"is_error": result.isError, "structured": result.structuredContent, "text": result.content[0].text}


async def scenario(config: dict) -> dict:
    report = {"sdk_version": importlib.metadata.version("mcp")}

    async def everything(session: ClientSession):
        initialized = await session.initialize()
        report["protocol_version"] = initialized.protocolVersion
        report["server_info"] = initialized.serverInfo.model_dump(mode="json", exclude_none=True)
        report["instructions"] = initialized.instructions
        report["ping"] = (await session.send_ping()).model_dump(mode="json", exclude_none=True)
        tools = await session.list_tools()
        report["tools"] = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools.tools]
        report["results"] = [_tool_result(await session.call_tool(name, args)) for name, args in config["calls"]]

    _, report["statuses"] = await _session(config["url"], config["key"], everything)

    async def without_scope(session: ClientSession):
        await session.initialize()
        try:
            await session.call_tool("send_email", {"from_email": "x@y.test", "to": ["a@b.test"], "subject": "s"})
        except McpError as exc:
            return {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
        return None

    report["scope_error"], _ = await _session(config["url"], config["read_only_key"], without_scope)

    try:
        await _session(config["url"], None, lambda session: session.initialize())
    except BaseException as exc:  # the transport's task group raises an ExceptionGroup
        report["missing_key"] = [str(leaf.response.status_code) for leaf in _leaves(exc) if hasattr(leaf, "response")]
    return report


def _leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


if __name__ == "__main__":
    print(json.dumps(asyncio.run(scenario(json.loads(sys.argv[1])))))
