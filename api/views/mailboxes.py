"""/mailboxes: the account's mailboxes, and connecting one that lives at another provider.
/mail/mailbox-usage: a mailbox's usage record."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import HostnameField, StrictInput
from api.permissions import request_account
from api.serializers import MailboxOutput
from mailcore.inbox.connected import mailbox_connect
from mailcore.mailboxes.selectors import mailbox_get_by_address, mailbox_list
from mailcore.usage.selectors import mailbox_usage


class ConnectInput(StrictInput):
    email = serializers.EmailField()
    imap_host = HostnameField()
    imap_port = serializers.IntegerField(min_value=1, max_value=65535, default=993)
    imap_tls = serializers.BooleanField(default=True)
    username = serializers.CharField(max_length=320)
    password = serializers.CharField(trim_whitespace=False, write_only=True)


class MailboxListApi(APIView):
    required_scopes = {"GET": "mailboxes:read", "POST": "mailboxes:write"}

    @extend_schema(tags=["mailboxes"], responses={200: MailboxOutput(many=True)}, summary="List the account's mailboxes")
    def get(self, request):
        return Response(MailboxOutput(mailbox_list(account=request_account(request)), many=True).data)


class MailboxConnectApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(
        tags=["mailboxes"],
        request=ConnectInput,
        responses={201: MailboxOutput},
        summary="Connect a mailbox at another provider over IMAP",
        description="The credentials are checked with a real login, then kept encrypted. A connected "
        "mailbox relays through its own provider, so it has no send quota here.",
    )
    def post(self, request):
        data = ConnectInput(data=request.data)
        data.is_valid(raise_exception=True)
        mailbox = mailbox_connect(account=request_account(request), **data.validated_data)
        return Response(MailboxOutput(mailbox).data, status=201)


class StorageOutput(serializers.Serializer):
    used_mb = serializers.FloatField()
    limit_mb = serializers.IntegerField()
    percentage = serializers.FloatField()


class EmailsTodayOutput(serializers.Serializer):
    sent = serializers.IntegerField()
    limit = serializers.IntegerField()
    percentage = serializers.FloatField()


class AiTodayOutput(serializers.Serializer):
    used = serializers.IntegerField()
    limit = serializers.IntegerField()
    unlimited = serializers.BooleanField()
    percentage = serializers.FloatField()


class UsageOutput(serializers.Serializer):
    email = serializers.CharField()
    plan = serializers.CharField()
    storage = StorageOutput()
    emails_today = EmailsTodayOutput()
    ai_today = AiTodayOutput()


class UsageQuery(serializers.Serializer):
    email = serializers.EmailField()


class MailboxUsageApi(APIView):
    required_scopes = "mailboxes:read"

    @extend_schema(
        tags=["usage"],
        parameters=[UsageQuery],
        responses={200: UsageOutput},
        summary="A mailbox's storage, sends today and AI requests today. Scope mailboxes:read.",
    )
    def get(self, request):
        query = UsageQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        mailbox = mailbox_get_by_address(account=request_account(request), address=query.validated_data["email"])
        return Response(UsageOutput(mailbox_usage(mailbox=mailbox)).data)
