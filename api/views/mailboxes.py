"""/mailboxes: the account's mailboxes; connecting one that lives at another provider (proved by a
code mailed to the address, or at once on a domain the account verified), confirming its code,
and disconnecting it. /mail/mailbox-usage: a mailbox's usage record."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import HostnameField, StrictInput
from api.permissions import request_account
from api.serializers import MailboxOutput
from mailcore.inbox.connected import (CODE_ATTEMPTS, CODE_LIFETIME, connected_mailbox_get, mailbox_connect,
                                      mailbox_connect_confirm, mailbox_disconnect)
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import mailbox_get_by_address, mailbox_list
from mailcore.remotemail import SMTP_SECURITY
from mailcore.usage.selectors import mailbox_usage

CODE_MINUTES = int(CODE_LIFETIME.total_seconds() // 60)


class ConnectInput(StrictInput):
    email = serializers.EmailField(help_text="The address to connect. Never an address, alias or subaddress "
                                             "hosted here, nor one on a domain another account hosts here.")
    imap_host = HostnameField(help_text="The provider's IMAP server: a name or address reachable on the public "
                                        "internet (private, loopback and link-local addresses are refused).")
    imap_port = serializers.IntegerField(min_value=1, max_value=65535, default=993)
    imap_tls = serializers.BooleanField(default=True, help_text="true: TLS from the start (port 993); false: "
                                                                "plain text.")
    username = serializers.CharField(max_length=320)
    password = serializers.CharField(max_length=1024, trim_whitespace=False, write_only=True)
    smtp_host = HostnameField(required=False, default="", allow_blank=True,
                              help_text="The provider's SMTP submission server, which mail from this mailbox "
                                        "goes through (same address rules as imap_host). Without it the mailbox "
                                        "can send only when this account has verified the address's domain "
                                        "(then through our relay, counted against the send quota).")
    smtp_port = serializers.IntegerField(min_value=1, max_value=65535, default=587)
    smtp_security = serializers.ChoiceField(choices=list(SMTP_SECURITY), default="starttls",
                                            help_text="starttls (port 587), tls (implicit, port 465) or none.")
    smtp_username = serializers.CharField(max_length=320, required=False, default="",
                                          help_text="Default: username.")
    smtp_password = serializers.CharField(max_length=1024, required=False, default="", trim_whitespace=False,
                                          write_only=True, help_text="Default: password.")


class PendingConnectionOutput(serializers.Serializer):
    email = serializers.CharField(source="address")
    status = serializers.CharField(default="pending", help_text="Always pending: confirm the mailed code.")
    expires_at = serializers.DateTimeField(help_text="The code works until then.")
    attempts_left = serializers.SerializerMethodField()

    def get_attempts_left(self, pending) -> int:
        return CODE_ATTEMPTS - pending.attempts


class ConfirmInput(StrictInput):
    email = serializers.EmailField()
    code = serializers.CharField(max_length=32, help_text="The code mailed to the address.")


class MailboxListApi(APIView):
    required_scopes = {"GET": "mailboxes:read", "POST": "mailboxes:write"}

    @extend_schema(tags=["mailboxes"], responses={200: MailboxOutput(many=True)},
                   summary="List the account's mailboxes")
    def get(self, request):
        return Response(MailboxOutput(mailbox_list(account=request_account(request)), many=True).data)


class MailboxConnectApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(
        tags=["mailboxes"],
        request=ConnectInput,
        responses={201: MailboxOutput, 202: PendingConnectionOutput},
        summary="Connect a mailbox at another provider over IMAP",
        description="Logs in to the IMAP server (and the SMTP submission server, when given) within a few "
        "seconds; servers must be on public addresses, and an answer never repeats what a server said. Then "
        "201: the mailbox is connected, when this account has verified the address's domain; or 202: a code "
        "was mailed to the address, and the mailbox is connected once `POST /mailboxes/connected/confirm` "
        f"gets it (within {CODE_MINUTES} minutes, {CODE_ATTEMPTS} tries). Posting again for the same address mails "
        "a new code. Mail from a connected mailbox goes through its provider's submission server (no send quota "
        "here), or through our relay, counted against the quota, when the account verified its domain and "
        "gave no smtp_host. 422 for an address that cannot be connected (hosted here), a server that cannot "
        "be reached or refuses the login; 409 when it is already connected in this account; 429 past the "
        "hourly limits of connection attempts and codes per account.",
    )
    def post(self, request):
        data = ConnectInput(data=request.data)
        data.is_valid(raise_exception=True)
        result = mailbox_connect(account=request_account(request), **data.validated_data)
        if isinstance(result, Mailbox):
            return Response(MailboxOutput(result).data, status=201)
        return Response(PendingConnectionOutput(result).data, status=202)


class MailboxConnectConfirmApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(
        tags=["mailboxes"],
        request=ConfirmInput,
        responses={201: MailboxOutput},
        summary="Confirm a connected mailbox with the code mailed to its address",
        description=f"422 for a wrong code (after {CODE_ATTEMPTS} wrong codes, or {CODE_MINUTES} minutes, connect "
        "again for a new one).",
    )
    def post(self, request):
        data = ConfirmInput(data=request.data)
        data.is_valid(raise_exception=True)
        mailbox = mailbox_connect_confirm(account=request_account(request), **data.validated_data)
        return Response(MailboxOutput(mailbox).data, status=201)


class MailboxDisconnectApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(tags=["mailboxes"], responses={204: None},
                   summary="Disconnect a connected mailbox",
                   description="Forgets the mailbox and its logins; its mail stays at its provider. 404 for "
                   "another account's mailbox or a hosted one.")
    def delete(self, request, mailbox_id: int):
        mailbox = connected_mailbox_get(account=request_account(request), mailbox_id=mailbox_id)
        mailbox_disconnect(mailbox=mailbox)
        return Response(status=204)


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
