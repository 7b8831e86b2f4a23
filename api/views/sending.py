"""POST /mail/send, the scheduled-mail endpoints and /mail/templates."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput, header_text
from api.pagination import page_query
from api.permissions import request_account
from api.serializers import SendInput, SendResult, send_result
from mailcore.apikeys.models import ApiKey
from mailcore.paging import page_window
from mailcore.sending.inputs import SendRequest
from mailcore.sending.held import held_event_data, held_list, held_reject, held_release
from mailcore.sending.services import mail_send, scheduled_cancel, scheduled_list
from mailcore.sending.mail_templates import (
    template_create,
    template_delete,
    template_get,
    template_update,
    template_visible,
)


def request_user(request):
    """The person a request acts for: the session's user, or the user who created the API key."""
    if isinstance(request.auth, ApiKey):
        return request.auth.created_by
    return request.user


def send(request, data: dict) -> dict:
    """POST /mail/send's call of the send service (the agent tool send_email calls the same one).

    The acting user only decides which templates the send may use, so an API key's creator is
    looked up (a query) only for a send that names a template."""
    user = request_user(request) if data.get("template_id") is not None else None
    message = mail_send(account=request_account(request), user=user, request=SendRequest.from_data(data))
    return send_result(message)


class MailSendApi(APIView):
    required_scopes = "send"

    @extend_schema(
        tags=["sending"],
        request=SendInput,
        responses={200: SendResult},
        summary="Send an email (scope send)",
        description="Validates, reserves quota and queues the message; the worker delivers it within "
        "seconds. scheduled_at or unsend_window hold it (status scheduled, cancellable). Sandbox runs "
        "everything but SMTP and counts against no quota. Over quota, or past CONNECTED_MAILBOX_SENDS_PER_HOUR "
        "sends an hour through connected mailboxes' own submission servers: 429 with Retry-After.",
    )
    def post(self, request):
        data = SendInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(send(request, data.validated_data))


class ScheduledOutput(serializers.Serializer):
    scheduled_id = serializers.IntegerField(source="pk")
    message_id = serializers.UUIDField()
    status = serializers.ChoiceField(
        choices=["scheduled", "queued", "sending", "held", "failed"],
        help_text="scheduled: waiting for its time; queued: due, or waiting for a retry after a temporary "
        "failure; sending: a worker has it; held: scored as likely spam, waiting for you to release or reject it "
        "(POST /mail/held/{id}/release or /reject); failed: it will not be sent (see error; email.failed was "
        "emitted)")
    from_email = serializers.CharField(source="mailbox.address")
    to = serializers.ListField(child=serializers.CharField(), source="payload.to")
    subject = serializers.CharField(source="payload.subject")
    scheduled_at = serializers.DateTimeField(source="due_at", help_text="When it will be sent (or was due)")
    is_undo_window = serializers.SerializerMethodField(help_text="true when held by unsend_window")
    attempts = serializers.IntegerField()
    error = serializers.SerializerMethodField(help_text="The last failure's reply, or null")
    created_at = serializers.DateTimeField()

    def get_is_undo_window(self, message) -> bool:
        return message.unsend_window is not None

    def get_error(self, message) -> str | None:
        return message.last_error or None


class ScheduledListQuery(serializers.Serializer):
    status = serializers.ChoiceField(choices=["scheduled", "queued", "sending", "held", "failed"], required=False,
                                     help_text="Only this state; without it, every state listed")


class ScheduledListApi(APIView):
    required_scopes = "send"

    @extend_schema(tags=["sending"], parameters=[ScheduledListQuery], responses={200: ScheduledOutput(many=True)},
                   summary="Mail not sent yet, and mail that failed in the last 7 days",
                   description="Emails waiting for their time (scheduled_at or the undo window), due or being "
                   "retried, plus every send that failed for good in the last 7 days with its error. Only "
                   "`scheduled` items can be cancelled.")
    def get(self, request):
        query = ScheduledListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = scheduled_list(account=request_account(request), status=query.validated_data.get("status"))
        return Response(ScheduledOutput(rows, many=True).data)


class ScheduledDetailApi(APIView):
    required_scopes = "send"

    @extend_schema(tags=["sending"], responses={204: None},
                   summary="Cancel a scheduled email before it is sent (404 once sent or not yours)")
    def delete(self, request, scheduled_id: int):
        scheduled_cancel(account=request_account(request), scheduled_id=scheduled_id)
        return Response(status=204)


class HeldOutput(serializers.Serializer):
    held_id = serializers.IntegerField()
    message_id = serializers.UUIDField()
    status = serializers.CharField(help_text="held, or queued once released or rejected (the worker finishes it)")
    origin = serializers.ChoiceField(choices=["webmail", "submission", "api"],
                                     help_text="Who wrote it: the webmail, the owner's own client (port 587), "
                                     "or the API (REST, MCP, campaigns)")
    score = serializers.FloatField(help_text="The spam score it got (rspamd's scale: GTUBE is 15)")
    threshold = serializers.FloatField(help_text="Mail scoring this or more is held")
    reasons = serializers.ListField(child=serializers.CharField(), help_text="What made it look like spam")
    held_at = serializers.DateTimeField()
    decision = serializers.CharField(allow_null=True, help_text="released or rejected, once decided")


def _held_record(message) -> dict:
    data = held_event_data(message)
    return {**data, "status": message.status, "decision": message.payload["held"].get("decision"),
            "from_email": data["from"]}


class HeldItemOutput(HeldOutput):
    from_email = serializers.CharField()
    to = serializers.ListField(child=serializers.CharField())
    subject = serializers.CharField()


class HeldListApi(APIView):
    required_scopes = "send"

    @extend_schema(tags=["sending"], responses={200: HeldItemOutput(many=True)},
                   summary="Sends held as likely spam before they left, waiting for you to release or reject them",
                   description="Mail that your mailboxes (or, for a hosting partner, its clients' mailboxes) sent "
                   "and that scored as likely spam is held instead of sent; email.held was emitted. Release it to "
                   "send it as it is, or reject it: it fails as a refused send and its owner gets it back.")
    def get(self, request):
        return Response(HeldItemOutput([_held_record(m) for m in held_list(account=request_account(request))],
                                       many=True).data)


class HeldReleaseApi(APIView):
    required_scopes = "send"

    @extend_schema(tags=["sending"], request=None, responses={200: HeldItemOutput},
                   summary="Release a held send: it leaves as it is (404 when it is not held)")
    def post(self, request, held_id: int):
        message = held_release(account=request_account(request), held_id=held_id)
        return Response(HeldItemOutput(_held_record(message)).data)


class HeldRejectApi(APIView):
    required_scopes = "send"

    @extend_schema(tags=["sending"], request=None, responses={200: HeldItemOutput},
                   summary="Reject a held send: it is not sent; email.failed follows and its owner gets it back")
    def post(self, request, held_id: int):
        message = held_reject(account=request_account(request), held_id=held_id)
        return Response(HeldItemOutput(_held_record(message)).data)


class TemplateInput(StrictInput):
    name = serializers.CharField(max_length=200)
    subject = serializers.CharField(max_length=998, required=False, allow_blank=True, default="",
                                    validators=[header_text])
    body_html = serializers.CharField(trim_whitespace=False)
    is_shared = serializers.BooleanField(required=False, default=False)


class TemplateUpdateInput(StrictInput):
    name = serializers.CharField(max_length=200, required=False)
    subject = serializers.CharField(max_length=998, required=False, allow_blank=True, validators=[header_text])
    body_html = serializers.CharField(required=False, trim_whitespace=False)
    is_shared = serializers.BooleanField(required=False)


class TemplateOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    subject = serializers.CharField()
    body_html = serializers.CharField()
    is_shared = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class TemplatePageOutput(serializers.Serializer):
    templates = TemplateOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


TemplatePageQuery = page_query(default_size=20, max_size=100, name="TemplatePageQuery")


class TemplateListCreateApi(APIView):
    required_scopes = "send"

    @extend_schema(tags=["templates"], operation_id="mail_templates_list", parameters=[TemplatePageQuery],
                   responses={200: TemplatePageOutput},
                   summary="List templates (yours and the account's shared ones), newest first")
    def get(self, request):
        query = TemplatePageQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, per_page = query.validated_data["page"], query.validated_data["per_page"]
        templates = template_visible(account=request_account(request), user=request_user(request))
        return Response(TemplatePageOutput(
            {"templates": page_window(templates, page=page, size=per_page), "total": templates.count(), "page": page, "per_page": per_page}).data)

    @extend_schema(tags=["templates"], request=TemplateInput, responses={201: TemplateOutput}, summary="Create a template")
    def post(self, request):
        data = TemplateInput(data=request.data)
        data.is_valid(raise_exception=True)
        template = template_create(account=request_account(request), created_by=request_user(request),
                                   **data.validated_data)
        return Response(TemplateOutput(template).data, status=201)


class TemplateDetailApi(APIView):
    required_scopes = "send"

    def _template(self, request, template_id: int):
        return template_get(account=request_account(request), user=request_user(request), template_id=template_id)

    @extend_schema(tags=["templates"], responses={200: TemplateOutput}, summary="Fetch a template")
    def get(self, request, template_id: int):
        return Response(TemplateOutput(self._template(request, template_id)).data)

    @extend_schema(tags=["templates"], request=TemplateUpdateInput, responses={200: TemplateOutput},
                   summary="Change a template")
    def patch(self, request, template_id: int):
        template = self._template(request, template_id)
        data = TemplateUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(TemplateOutput(template_update(template=template, **data.validated_data)).data)

    @extend_schema(tags=["templates"], responses={204: None}, summary="Delete a template")
    def delete(self, request, template_id: int):
        template_delete(template=self._template(request, template_id))
        return Response(status=204)
