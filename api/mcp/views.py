"""POST /mcp, the agent tool server's one endpoint (spec: Agent tool server, Authentication item 7)."""
import json

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from api.authentication import ApiKeyAuthentication
from api.mcp.protocol import exchange
from api.mcp.tools import Caller
from api.permissions import PlanFeature, request_account
from api.views.sending import request_user


class JsonRpcMessage(serializers.Serializer):
    jsonrpc = serializers.CharField(help_text='Always "2.0".')
    id = serializers.JSONField(required=False, help_text="A string or a number; absent in a notification.")
    method = serializers.CharField(help_text="initialize, notifications/initialized, ping, tools/list, tools/call "
                                   "or (protocol 2026-07-28) server/discover")
    params = serializers.DictField(required=False)


class JsonRpcErrorObject(serializers.Serializer):
    code = serializers.IntegerField()
    message = serializers.CharField()
    data = serializers.JSONField(required=False)


class JsonRpcReply(serializers.Serializer):
    jsonrpc = serializers.CharField()
    id = serializers.JSONField(allow_null=True)
    result = serializers.DictField(required=False)
    error = JsonRpcErrorObject(required=False)


# One reply, or an array of them for a batch (protocol 2025-03-26).
REPLY_OR_BATCH = {"oneOf": [{"$ref": "#/components/schemas/JsonRpcReply"},
                            {"type": "array", "items": {"$ref": "#/components/schemas/JsonRpcReply"}}]}


class JsonAnswers(DefaultContentNegotiation):
    """Answers are always JSON; whether the client takes JSON is checked once the key is (401 comes first)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def accepts_json(accept: str) -> bool:
    ranges = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return not accept.strip() or bool(ranges & {"application/json", "application/*", "*/*"})


class McpApi(APIView):
    """API keys only: no cookie session here, so no CSRF either."""

    content_negotiation_class = JsonAnswers
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAuthenticated, PlanFeature]
    required_feature = "ai_agent_tools"

    @extend_schema(
        tags=["agent tools"],
        operation_id="mcp",
        request=JsonRpcMessage,
        responses={
            200: OpenApiResponse(REPLY_OR_BATCH, description="The JSON-RPC response (an array for a batch)."),
            202: OpenApiResponse(description="A notification (or a batch of notifications) was accepted."),
            400: OpenApiResponse(REPLY_OR_BATCH, description="Parse error, invalid request, unsupported protocol "
                                 "version; with 2026-07-28 also invalid params and header mismatch."),
            404: OpenApiResponse(JsonRpcReply, description="Protocol 2026-07-28: unknown method (-32601)."),
        },
        summary="Agent tool server (Model Context Protocol, streamable HTTP, JSON responses)",
        description="One JSON-RPC 2.0 message per POST (a batch too with protocol 2025-03-26). Protocol versions "
        "2024-11-05 to 2025-11-25 start with initialize; 2026-07-28 sends its version in params._meta and the "
        "MCP-Protocol-Version, Mcp-Method and Mcp-Name headers and may ask server/discover. Tools: send_email "
        "(scope send), list_mailboxes, search_emails, list_recent_messages (scope mailboxes:read); a missing scope "
        "is JSON-RPC error -32603. No or a bad key: 401; a plan without AI agent tools: 403. GET answers 405 "
        "(no server-sent events). See docs/mcp.md.",
        examples=[OpenApiExample("tools/call", request_only=True, value={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_recent_messages", "arguments": {"email": "hello@example.com", "per_page": 5}},
        })],
    )
    def post(self, request):
        media_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise exceptions.UnsupportedMediaType(media_type or "none")
        if not accepts_json(request.headers.get("Accept", "")):
            raise exceptions.NotAcceptable("Answers are application/json; send Accept: application/json, "
                                           "text/event-stream.")
        caller = Caller(account=request_account(request), api_key=request.auth, user=request_user(request))
        reply = exchange(body=request.body, headers=request.headers, caller=caller)
        body = b"" if reply.payload is None else json.dumps(reply.payload, ensure_ascii=False).encode()
        response = HttpResponse(body, status=reply.status, content_type="application/json")
        response["Cache-Control"] = "no-store"
        return response
