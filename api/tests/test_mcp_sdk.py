"""The official MCP Python SDK clients against a live server: 2.x in its default mode (it probes
server/discover and speaks 2026-07-28) and in legacy mode (initialize, 2025-11-25), and 1.x
(initialize) from its own virtualenv, since both majors are the distribution `mcp`."""
import asyncio
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from django.conf import settings
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from testkit.clients import new_key
from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.models import OutboundMessage
from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox, make_message
from mailcore.usage.models import MailboxDailyUsage

pytestmark = pytest.mark.django_db(transaction=True)  # the live server reads the test database from its thread

ADDRESS = "agent@example.test"
SDK1_PYTHON = Path(settings.BASE_DIR) / ".venv" / "mcp1" / "bin" / "python"
SDK1_CLIENT = Path(__file__).parent / "mcp_clients" / "sdk1_client.py"
TOOL_NAMES = ["send_email", "list_mailboxes", "search_emails", "list_recent_messages", "mark_spam", "mark_not_spam"]
CALLS = [
    ("list_mailboxes", {}),
    ("list_recent_messages", {"email": ADDRESS, "per_page": 2}),
    ("search_emails", {"email": ADDRESS, "q": "invoice"}),
    ("send_email", {"from_email": ADDRESS, "to": ["bob@remote.test"], "subject": "From an agent", "body_text": "Hi"}),
    ("search_emails", {"email": "nobody@example.test", "q": "invoice"}),
]


@dataclass(frozen=True)
class Served:
    url: str
    key: str
    read_only_key: str
    mailbox: Mailbox


@pytest.fixture
def served(plans, live_server) -> Served:
    owner = UserFactory(account__plan_code="premium")
    mailbox = make_mailbox(owner.account, ADDRESS)
    for subject in ("Invoice April", "Lunch on Friday", "Invoice May"):
        store_for(mailbox).append("INBOX", make_message(subject))
    return Served(url=f"{live_server.url}/mcp", key=new_key(owner, scopes=["send", "mailboxes:read"]),
                  read_only_key=new_key(owner, scopes=["mailboxes:read"]), mailbox=mailbox)


def check_tool_results(served: Served, results: list[dict]) -> None:
    """`results`: one {is_error, structured, text} per CALLS entry, whichever client made them."""
    mailboxes, recent, search, sent, unknown = results
    assert [m["email"] for m in mailboxes["structured"]["mailboxes"]] == [ADDRESS]
    assert [m["untrusted"]["subject"] for m in recent["structured"]["messages"]] == ["Invoice May", "Lunch on Friday"]
    assert recent["structured"]["total"] == 3
    assert [m["untrusted"]["subject"] for m in search["structured"]["messages"]] == ["Invoice May", "Invoice April"]
    assert sent["structured"]["status"] == "sent"
    assert OutboundMessage.objects.get(message_id=sent["structured"]["message_id"]).sandbox is True
    assert unknown["is_error"] is True
    assert unknown["structured"]["detail"].startswith("No such mailbox: nobody@example.test.")
    assert all(json.loads(result["text"]) == result["structured"] for result in results)
    today = MailboxDailyUsage.objects.get(mailbox=served.mailbox, date=timezone.now().date())
    assert today.ai_requests == 3  # list_mailboxes and the unknown mailbox are not counted


async def sdk2_session(url: str, key: str | None, mode: str, work, exchanges: list):
    """Run `work(client)` in an SDK 2.x client session; `exchanges` collects the (JSON-RPC method,
    HTTP status) of every POST the client makes."""

    async def record(response):
        await response.aread()
        exchanges.append((json.loads(response.request.content).get("method"), response.status_code))

    headers = {"X-API-Key": key} if key else {}
    async with httpx2.AsyncClient(headers=headers, event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            return await work(client)


async def sdk2_everything(client: Client) -> dict:
    tools = await client.list_tools()
    results = []
    for name, arguments in CALLS:
        result = await client.call_tool(name, arguments)
        results.append({"is_error": result.is_error, "structured": result.structured_content,
                        "text": result.content[0].text})
    return {"protocol_version": client.session.protocol_version, "server_info": client.session.server_info,
            "tools": tools.tools, "results": results}


async def sdk2_scope_error(client: Client) -> MCPError:
    with pytest.raises(MCPError) as raised:
        await client.call_tool("send_email", {"from_email": ADDRESS, "to": ["bob@remote.test"], "subject": "s"})
    return raised.value


@pytest.mark.parametrize("mode, version, opening", [
    ("auto", "2026-07-28", [("server/discover", 200), ("tools/list", 200)]),
    ("legacy", "2025-11-25", [("initialize", 200), ("notifications/initialized", 202), ("tools/list", 200)]),
])
def test_the_sdk_2_client_lists_and_calls_every_tool(served, mode, version, opening):
    exchanges = []
    report = asyncio.run(sdk2_session(served.url, served.key, mode, sdk2_everything, exchanges))
    assert report["protocol_version"] == version
    assert (report["server_info"].name, report["server_info"].title) == ("mailwell", "Mailwell")
    assert [tool.name for tool in report["tools"]] == TOOL_NAMES
    assert all(tool.input_schema["type"] == "object" and tool.output_schema for tool in report["tools"])
    check_tool_results(served, report["results"])
    assert exchanges == opening + [("tools/call", 200)] * len(CALLS)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_2_client_gets_json_rpc_error_32603_for_a_missing_scope(served, mode):
    error = asyncio.run(sdk2_session(served.url, served.read_only_key, mode, sdk2_scope_error, []))
    assert error.code == -32603
    assert error.error.message == "This API key lacks the 'send' scope, which send_email needs."
    assert OutboundMessage.objects.count() == 0


@pytest.mark.parametrize("mode, refused", [("auto", [("server/discover", 401), ("initialize", 401)]),
                                           ("legacy", [("initialize", 401)])])
def test_the_sdk_2_client_without_a_key_is_refused_with_401(served, mode, refused):
    exchanges = []
    with pytest.raises(ExceptionGroup) as raised:
        asyncio.run(sdk2_session(served.url, None, mode, None, exchanges))
    assert raised.group_contains(MCPError, depth=2)
    assert exchanges == refused  # auto: the probe, then the initialize fallback; neither passed the key check


def test_the_sdk_1_client_initializes_lists_and_calls_every_tool(served):
    if not SDK1_PYTHON.exists():
        pytest.fail(f"The MCP SDK 1.x virtualenv is missing ({SDK1_PYTHON}): run `make setup-test`.", pytrace=False)
    config = {"url": served.url, "key": served.key, "read_only_key": served.read_only_key, "calls": CALLS}
    finished = subprocess.run([str(SDK1_PYTHON), str(SDK1_CLIENT), json.dumps(config)], capture_output=True,
                              text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)
    assert report["sdk_version"].startswith("1.")
    assert report["protocol_version"] == "2025-11-25"
    assert report["server_info"] == {"name": "mailwell", "title": "Mailwell", "version": "1.0.0"}
    assert "list_mailboxes" in report["instructions"]
    assert report["ping"] == {}
    assert [tool["name"] for tool in report["tools"]] == TOOL_NAMES
    assert report["tools"][0]["inputSchema"]["properties"]["sandbox"]["default"] is True
    check_tool_results(served, report["results"])
    assert report["statuses"] == [200, 202, 200, 200] + [200] * len(CALLS)
    assert report["scope_error"] == {"code": -32603,
                                     "message": "This API key lacks the 'send' scope, which send_email needs.",
                                     "data": {"tool": "send_email", "scope": "send"}}
    assert report["missing_key"] == ["401"]
