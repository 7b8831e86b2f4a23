"""Records that more than one interface of the API shows or takes (REST views and the MCP tools):
defined once here, never imported from another view module."""
import re

from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from api.inputs import AddressField, OptionalAddressField, ReusedFields, StrictInput, header_text
from mailcore.sending.services import MAX_UNSEND_WINDOW

_SURROGATE = re.compile("[\ud800-\udfff]")


class _FastSurrogateCheck(ProhibitSurrogateCharactersValidator):
    """DRF's check with the same error, as one regex search: DRF loops over every character in
    Python, which for a message body of tens of kilobytes costs milliseconds."""

    def __call__(self, value):
        if found := _SURROGATE.search(str(value)):
            raise ValidationError(self.message.format(code_point=ord(found.group())), code=self.code)


class BodyField(serializers.CharField):
    """A long text (a message body): a CharField whose surrogate check is _FastSurrogateCheck."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.validators = [_FastSurrogateCheck() if isinstance(validator, ProhibitSurrogateCharactersValidator)
                           else validator for validator in self.validators]


class MailboxOutput(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField(source="address")
    kind = serializers.CharField(help_text="managed (hosted here) or connected (IMAP at another provider)")
    display_name = serializers.CharField()
    plan = serializers.CharField(source="effective_plan.code")
    quota_mb = serializers.IntegerField()
    is_active = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class WithFrom:
    """An output with a `from` field: a Python keyword, so it is declared as `sender` and renamed
    here, where both the response and the OpenAPI schema read the fields."""

    def get_fields(self):
        return {("from" if name == "sender" else name): field for name, field in super().get_fields().items()}


class MessageSummaryOutput(WithFrom, serializers.Serializer):
    uid = serializers.IntegerField()
    subject = serializers.CharField()
    sender = serializers.CharField(source="from_")
    date = serializers.DateTimeField(allow_null=True)
    seen = serializers.BooleanField()
    starred = serializers.BooleanField()
    has_attachments = serializers.BooleanField()
    size = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.IntegerField())


AUTHENTICATION_RESULT = "An RFC 8601 result: pass, fail, softfail, neutral, none, temperror or permerror."


class AuthenticationOutput(serializers.Serializer):
    """Who really sent a message: our Authentication-Results header, read back."""

    spf = serializers.CharField(help_text=AUTHENTICATION_RESULT)
    dkim = serializers.CharField(help_text=AUTHENTICATION_RESULT)
    dmarc = serializers.CharField(help_text=AUTHENTICATION_RESULT + " fail: the From domain's owner did not send it.")
    arc = serializers.CharField(help_text=AUTHENTICATION_RESULT)


class SenderRuleOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="allow or block")
    sender = serializers.CharField(help_text="An address, or a domain (it covers its subdomains).")
    created_at = serializers.DateTimeField()


class SenderRuleInput(StrictInput):
    kind = serializers.ChoiceField(choices=["allow", "block"])
    sender = serializers.CharField(max_length=320, help_text="user@example.com, or example.com for the domain "
                                   "and its subdomains (@example.com and *.example.com mean the same).")


class AttachmentInput(StrictInput):
    filename = serializers.CharField(max_length=255)
    content_base64 = serializers.CharField(trim_whitespace=False)
    content_type = serializers.CharField(max_length=255, default="application/octet-stream")


class SendInput(ReusedFields, StrictInput):
    from_email = serializers.EmailField()
    to = serializers.ListField(child=AddressField(), min_length=1, max_length=50)
    cc = serializers.ListField(child=AddressField(), required=False, default=list, max_length=50)
    bcc = serializers.ListField(child=AddressField(), required=False, default=list, max_length=50)
    subject = serializers.CharField(required=False, allow_blank=True, max_length=998, validators=[header_text])
    body_html = BodyField(required=False, allow_blank=True, trim_whitespace=False)
    body_text = BodyField(required=False, allow_blank=True, trim_whitespace=False)
    template_id = serializers.IntegerField(required=False)
    variables = serializers.DictField(required=False, default=dict)
    reply_to = OptionalAddressField(required=False)
    track_opens = serializers.BooleanField(required=False, default=False)
    scheduled_at = serializers.DateTimeField(required=False)
    unsend_window = serializers.IntegerField(required=False, min_value=1, max_value=MAX_UNSEND_WINDOW)
    attachments = AttachmentInput(many=True, required=False, default=list)
    sandbox = serializers.BooleanField(required=False, default=False)


class SendResult(serializers.Serializer):
    message_id = serializers.UUIDField()
    status = serializers.CharField(help_text="sent, or scheduled when scheduled_at or unsend_window was given")
    scheduled_at = serializers.DateTimeField(allow_null=True)
    scheduled_id = serializers.IntegerField(allow_null=True)


def send_result(message) -> dict:
    held = message.is_held
    return SendResult({
        "message_id": message.message_id,
        "status": "scheduled" if held else "sent",
        "scheduled_at": message.due_at if held else None,
        "scheduled_id": message.pk if held else None,
    }).data
