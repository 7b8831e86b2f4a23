"""/v1/hosting/quarantine: the messages held for the partner's client mailboxes, across its clients
(filterable by client and mailbox); release (optionally allow-listing the sender) and delete."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.views import MAILBOXES
from api.inputs import StrictInput
from api.pagination import page_query
from mailcore.paging import page_window
from protection.quarantine import quarantine_delete, quarantine_expires_at, quarantine_release
from protection.selectors import STATES, WAITING, partner_quarantine, partner_quarantined_get

TAG = "hosting: quarantine"


class QuarantinedOutput(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    mailbox = serializers.CharField(source="mailbox.address")
    mailbox_id = serializers.IntegerField(source="mailbox.partner_mailbox.pk")
    client_id = serializers.IntegerField(source="mailbox.domain.client_id", allow_null=True)
    status = serializers.SerializerMethodField()
    from_ = serializers.CharField(source="from_header")
    envelope_from = serializers.CharField()
    subject = serializers.CharField()
    message_id = serializers.CharField()
    score = serializers.FloatField()
    reasons = serializers.ListField(child=serializers.CharField())
    virus = serializers.CharField(allow_null=True)
    size_bytes = serializers.IntegerField(source="size")
    quarantined_at = serializers.DateTimeField(source="created_at")
    expires_at = serializers.SerializerMethodField()
    released_at = serializers.DateTimeField(allow_null=True)
    released_by = serializers.CharField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def get_status(self, item) -> str:
        return "released" if item.released_at else "deleted" if item.deleted_at else WAITING

    def get_expires_at(self, item) -> str:
        return serializers.DateTimeField().to_representation(quarantine_expires_at(item))

    def to_representation(self, item):
        data = super().to_representation(item)
        data["virus"] = item.virus or None
        return data


class QuarantinedDetailOutput(QuarantinedOutput):
    symbols = serializers.DictField(help_text="rspamd's symbols: name -> {score, description, options}")


class QuarantinePageOutput(serializers.Serializer):
    messages = QuarantinedOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


class QuarantineListQuery(page_query(name="QuarantinePageQuery")):
    client_id = serializers.IntegerField(required=False, min_value=1)
    mailbox_id = serializers.IntegerField(required=False, min_value=1, help_text="A /v1/hosting/mailboxes id.")
    status = serializers.ChoiceField(choices=STATES, default=WAITING)


class ReleaseInput(StrictInput):
    allow_sender = serializers.BooleanField(default=False, help_text="Also allow the sender's address for this "
                                            "mailbox (its allow list), in the same action.")


class ReleasedOutput(serializers.Serializer):
    message = QuarantinedOutput()
    sender_allowed = serializers.CharField(allow_null=True)


class HostingQuarantineListApi(HostingApi):
    required_scopes = MAILBOXES

    @extend_schema(tags=[TAG], operation_id="hosting_quarantine_list", parameters=[QuarantineListQuery],
                   responses={200: QuarantinePageOutput},
                   summary="Quarantined messages of your client mailboxes, newest first",
                   description="By default those still waiting; `status` also lists released, deleted or all. "
                   "`client_id` and `mailbox_id` narrow the list to one client or one mailbox.")
    def get(self, request):
        query = QuarantineListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        fields = query.validated_data
        rows = partner_quarantine(partner=self.partner, state=fields["status"], client_id=fields.get("client_id"),
                                  partner_mailbox_id=fields.get("mailbox_id")).select_related(
            "mailbox__partner_mailbox")
        page, per_page = fields["page"], fields["per_page"]
        return Response(QuarantinePageOutput({"messages": page_window(rows, page=page, size=per_page),
                                              "total": rows.count(), "page": page, "per_page": per_page}).data)


class _QuarantinedApi(HostingApi):
    @property
    def released_by(self) -> str:
        """Who acts, as the message's record and email.released say: the person, or the account for a key."""
        return f"partner {getattr(self.request.user, 'email', '') or self.partner.account.name}"

    def item(self, quarantine_id: str):
        return partner_quarantined_get(partner=self.partner, public_id=quarantine_id)


class HostingQuarantineDetailApi(_QuarantinedApi):
    required_scopes = MAILBOXES

    @extend_schema(tags=[TAG], operation_id="hosting_quarantine_get", responses={200: QuarantinedDetailOutput},
                   summary="One quarantined message, with rspamd's symbols")
    def get(self, request, quarantine_id: str):
        return Response(QuarantinedDetailOutput(self.item(quarantine_id)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_quarantine_delete", responses={204: None},
                   summary="Delete a quarantined message for good", description="409: already released or deleted.")
    def delete(self, request, quarantine_id: str):
        quarantine_delete(item=self.item(quarantine_id), by=self.released_by)
        return Response(status=204)


class HostingQuarantineReleaseApi(_QuarantinedApi):
    required_scopes = {"POST": "partner:mailboxes:write"}

    @extend_schema(tags=[TAG], operation_id="hosting_quarantine_release", request=ReleaseInput,
                   responses={200: ReleasedOutput},
                   summary="Release: deliver the message once to the mailbox's Inbox",
                   description="Delivered to the Inbox (never Junk), once: 409 when it was already released or "
                   "deleted. With allow_sender the sender's address is added to the mailbox's allow list. "
                   "502: the mailbox's store could not be reached; the message stays waiting.")
    def post(self, request, quarantine_id: str):
        data = ReleaseInput(data=request.data)
        data.is_valid(raise_exception=True)
        released = quarantine_release(item=self.item(quarantine_id), by=self.released_by,
                                      allow_sender=data.validated_data["allow_sender"])
        return Response(ReleasedOutput({"message": released.item,
                                        "sender_allowed": released.allowed.sender if released.allowed else None}).data)
