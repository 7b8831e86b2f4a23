"""/inbox: a mailbox's messages over its IMAP folders. `mailboxes:read` reads, `mailboxes:write` changes."""
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.pagination import page_query
from api.serializers import AuthenticationOutput, MessageSummaryOutput, WithFrom
from api.permissions import request_account
from mailcore.inbox.downloads import download_headers
from mailcore.inbox.services import (
    inbox_attachment,
    inbox_folders,
    inbox_list,
    inbox_message,
    message_delete,
    message_update,
)
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import mailbox_get_by_address
from protection.authentication import message_authentication



class AddressQuery(serializers.Serializer):
    email = serializers.EmailField(help_text="The mailbox address (one of yours).")


class MailboxQuery(AddressQuery):
    folder = serializers.CharField(default="INBOX", max_length=255, help_text="IMAP folder; default INBOX.")


class ListQuery(MailboxQuery, page_query(default_size=50, max_size=100)):
    starred_only = serializers.BooleanField(default=False)
    unseen_only = serializers.BooleanField(default=False)
    label = serializers.IntegerField(required=False, help_text="Only messages carrying this label id.")


class MessageQuery(MailboxQuery):
    allow_remote_images = serializers.BooleanField(default=False)


def _query(serializer_class, request) -> dict:
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


def _mailbox(request, address: str) -> Mailbox:
    return mailbox_get_by_address(account=request_account(request), address=address)


class MessageListOutput(serializers.Serializer):
    messages = MessageSummaryOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


_DATE = MessageSummaryOutput().fields["date"]


def _summary_data(item) -> dict:
    """MessageSummaryOutput's representation of a list item, built directly: the field machinery
    cost more than the rest of a page's Django side. The schema stays MessageListOutput's."""
    summary = item.summary
    return {"uid": int(summary.uid), "subject": str(summary.subject), "date": _DATE.to_representation(summary.date),
            "seen": bool(summary.seen), "starred": bool(summary.starred),
            "has_attachments": bool(summary.has_attachments), "size": int(summary.size),
            "labels": [int(label) for label in item.labels], "from": str(summary.from_)}


class AttachmentOutput(serializers.Serializer):
    index = serializers.IntegerField()
    filename = serializers.CharField()
    content_type = serializers.CharField()
    size = serializers.IntegerField()
    inline = serializers.BooleanField()
    url = serializers.CharField()


class MessageOutput(WithFrom, serializers.Serializer):
    uid = serializers.IntegerField()
    folder = serializers.CharField()
    message_id = serializers.CharField()
    subject = serializers.CharField()
    sender = serializers.CharField(source="sender")
    to = serializers.ListField(child=serializers.CharField())
    cc = serializers.ListField(child=serializers.CharField())
    reply_to = serializers.ListField(child=serializers.CharField())
    date = serializers.DateTimeField(allow_null=True)
    in_reply_to = serializers.CharField(allow_null=True)
    references = serializers.CharField()
    seen = serializers.BooleanField()
    starred = serializers.BooleanField()
    labels = serializers.ListField(child=serializers.IntegerField())
    size = serializers.IntegerField()
    headers = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))
    body_text = serializers.CharField(allow_blank=True)
    body_html = serializers.CharField(allow_blank=True, help_text="Sanitized for display.")
    remote_images_blocked = serializers.BooleanField()
    attachments = AttachmentOutput(many=True)
    authentication = AuthenticationOutput(
        allow_null=True, help_text="SPF, DKIM, DMARC and ARC as checked when the message arrived; null when it "
        "carries no Authentication-Results of ours (sent from here, or arrived while scanning was off).")
    authentication_warning = serializers.CharField(
        allow_blank=True, help_text="A plain-words warning when the sender is not who the From line claims "
        "(DMARC failed), as the webmail shows it; empty otherwise.")


class MessageUpdateInput(StrictInput):
    seen = serializers.BooleanField(required=False)
    starred = serializers.BooleanField(required=False)
    folder = serializers.CharField(required=False, max_length=255, help_text="Move the message to this folder.")
    labels = serializers.ListField(
        child=serializers.IntegerField(), required=False, help_text="Label ids; replaces the message's labels."
    )


class MessageUpdateOutput(serializers.Serializer):
    uid = serializers.IntegerField(help_text="The message's UID in the folder it is now in.")
    folder = serializers.CharField()
    seen = serializers.BooleanField()
    starred = serializers.BooleanField()
    labels = serializers.ListField(child=serializers.IntegerField())


class FolderOutput(serializers.Serializer):
    name = serializers.CharField()
    special_use = serializers.CharField(allow_null=True, help_text="\\\\Sent, \\\\Trash... (RFC 6154)")
    total = serializers.IntegerField()
    unseen = serializers.IntegerField()


class FolderListOutput(serializers.Serializer):
    folders = FolderOutput(many=True)


class InboxListApi(APIView):
    required_scopes = "mailboxes:read"

    @extend_schema(
        tags=["inbox"],
        operation_id="inbox_list",
        parameters=[ListQuery],
        responses={200: MessageListOutput},
        summary="List messages (newest first). Scope mailboxes:read.",
    )
    def get(self, request):
        query = _query(ListQuery, request)
        found = inbox_list(
            mailbox=_mailbox(request, query["email"]), folder=query["folder"], page=query["page"],
            per_page=query["per_page"], starred_only=query["starred_only"], unseen_only=query["unseen_only"],
            label_id=query.get("label"),
        )
        return Response({"messages": [_summary_data(item) for item in found.messages], "total": int(found.total),
                         "page": int(found.page), "per_page": int(found.per_page)})


class InboxMessageApi(APIView):
    required_scopes = {"GET": "mailboxes:read", "PATCH": "mailboxes:write", "DELETE": "mailboxes:write"}

    @extend_schema(
        tags=["inbox"],
        parameters=[MessageQuery],
        responses={200: MessageOutput},
        summary="Fetch one message with its bodies. Scope mailboxes:read.",
        description="body_html is sanitized; remote images are removed (remote_images_blocked true) unless "
        "allow_remote_images=true. Reading does not mark the message seen; PATCH does.",
    )
    def get(self, request, uid: int):
        query = _query(MessageQuery, request)
        mailbox = _mailbox(request, query["email"])
        found = inbox_message(mailbox=mailbox, folder=query["folder"], uid=uid,
                              allow_remote_images=query["allow_remote_images"])
        message = found.message
        authentication = message_authentication(message.headers)
        base = request.build_absolute_uri(f"/inbox/{uid}/attachments/")
        record = {
            **vars(message),
            **{name: getattr(found, name) for name in ("uid", "folder", "seen", "starred", "labels", "size",
                                                        "body_html", "remote_images_blocked")},
            "sender": message.from_,
            "headers": [{"name": name, "value": value} for name, value in message.headers],
            "body_text": message.text,
            "authentication": authentication.results,
            "authentication_warning": authentication.warning,
            "attachments": [
                {**vars(a), "url": f"{base}{a.index}?email={mailbox.address}&folder={found.folder}"}
                for a in message.attachments
            ],
        }
        return Response(MessageOutput(record).data)

    @extend_schema(
        tags=["inbox"],
        parameters=[MailboxQuery],
        request=MessageUpdateInput,
        responses={200: MessageUpdateOutput},
        summary="Mark seen/starred, set labels, or move to another folder. Scope mailboxes:write.",
    )
    def patch(self, request, uid: int):
        query = _query(MailboxQuery, request)
        mailbox = _mailbox(request, query["email"])
        data = MessageUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        result = message_update(
            mailbox=mailbox, folder=query["folder"], uid=uid, move_to=changes.pop("folder", None), **changes
        )
        return Response(MessageUpdateOutput(result).data)

    @extend_schema(
        tags=["inbox"],
        parameters=[MailboxQuery],
        responses={204: None},
        summary="Delete a message permanently. Scope mailboxes:write.",
    )
    def delete(self, request, uid: int):
        query = _query(MailboxQuery, request)
        message_delete(mailbox=_mailbox(request, query["email"]), folder=query["folder"], uid=uid)
        return Response(status=204)


class InboxAttachmentApi(APIView):
    required_scopes = "mailboxes:read"

    @extend_schema(
        tags=["inbox"],
        parameters=[MailboxQuery],
        responses={(200, "application/octet-stream"): bytes},
        summary="Download an attachment. Scope mailboxes:read.",
    )
    def get(self, request, uid: int, index: int):
        query = _query(MailboxQuery, request)
        attachment, payload = inbox_attachment(mailbox=_mailbox(request, query["email"]), folder=query["folder"],
                                               uid=uid, index=index)
        return HttpResponse(payload, headers=download_headers(attachment.filename, "application/octet-stream"))


class InboxFoldersApi(APIView):
    required_scopes = "mailboxes:read"

    @extend_schema(
        tags=["inbox"],
        parameters=[AddressQuery],
        responses={200: FolderListOutput},
        summary="All IMAP folders of the mailbox. Scope mailboxes:read.",
    )
    def get(self, request):
        query = _query(AddressQuery, request)
        folders = inbox_folders(mailbox=_mailbox(request, query["email"]))
        return Response(FolderListOutput({"folders": [vars(folder) for folder in folders]}).data)
