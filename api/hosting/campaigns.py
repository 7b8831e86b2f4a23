"""/v1/hosting/mailboxes/{id}/campaigns: campaigns sent from the mailbox to its client's contacts,
their steps (a drip sequence with A/B subjects), the life cycle actions and the stats. Reading needs
`partner:mailboxes:read`, changing `partner:mailboxes:write`; the mailbox's plan must include
campaigns (403 naming the plan). Another partner's mailbox, or another mailbox's campaign, is 404."""
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Subquery
from django.db.models.functions import Coalesce
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from api.hosting.contacts import ClientBookApi, group_of
from api.inputs import StrictInput, one_line
from api.pagination import page_query
from campaigns import services
from campaigns.models import Campaign, CampaignStep, Enrollment
from campaigns.segments import DATE_FIELDS, DATE_OPS, MAX_CONDITIONS, MAX_DEPTH, TEXT_FIELDS, TEXT_OPS
from campaigns.stats import campaign_stats
from mailcore.mailboxes.models import Alias, Mailbox
from mailcore.paging import page_window

TAG = "hosting: campaigns"
MAX_BODY = 500_000
MAX_DELAY_HOURS = 8760
MAX_POSTAL = 1000
STATES = (
    "States: `draft` (editable, nothing sent) -> `sending` (POST /send enrols the audience once; due steps go out) "
    "<-> `paused` (POST /pause holds every delivery at once; POST /resume carries on where it stopped, sending what "
    "fell due meanwhile) -> `completed` (every enrolled contact got every step, or stopped). POST /cancel ends any "
    "campaign that is not completed: `cancelled`, pending deliveries are dropped. A state that does not allow the "
    "call is 409 with the reason.")
GATE = ("The mailbox's plan must include campaigns (else 403 naming the plan). The audience is the contacts of the "
        "client that owns the mailbox's domain. 404: not your mailbox, or another mailbox's campaign.")
SEGMENT_HELP = (
    "Which of the client's contacts the campaign reaches, on top of group_id: a list of conditions that must all "
    "hold (empty: everyone). A condition is one of `{\"field\": F, \"op\": O, \"value\": V}` with F in "
    f"{', '.join(TEXT_FIELDS)} and O in {', '.join(TEXT_OPS)} (V a string of 1 to 320 characters; none for is_empty "
    f"and is_not_empty), or F {', '.join(DATE_FIELDS)} with O in {', '.join(DATE_OPS)} and V an ISO 8601 date or "
    "datetime; `{\"in_group\": id}` or `{\"not_in_group\": id}` (a group of the client's contacts); "
    "`{\"any\": [conditions]}`, `{\"all\": [conditions]}`, `{\"not\": condition}`. Text matches ignore case. At most "
    f"{MAX_CONDITIONS} conditions and {MAX_DEPTH} levels. 422 names what is wrong. Compiled to database queries, "
    "never SQL text.")
_CONDITION = {"type": "object", "description": "A condition of the same shape."}
SEGMENT_CONDITION = {
    "type": "object",
    "description": "One segment condition: exactly one of the shapes below.",
    "oneOf": [
        {"title": "text field", "type": "object", "additionalProperties": False, "required": ["field", "op"],
         "properties": {"field": {"type": "string", "enum": list(TEXT_FIELDS)},
                        "op": {"type": "string", "enum": list(TEXT_OPS)},
                        "value": {"type": "string", "minLength": 1, "maxLength": 320}}},
        {"title": "date field", "type": "object", "additionalProperties": False, "required": ["field", "op", "value"],
         "properties": {"field": {"type": "string", "enum": list(DATE_FIELDS)},
                        "op": {"type": "string", "enum": list(DATE_OPS)},
                        "value": {"type": "string", "description": "ISO 8601 date or datetime (UTC if no offset)"}}},
        {"title": "in group", "type": "object", "additionalProperties": False, "required": ["in_group"],
         "properties": {"in_group": {"type": "integer"}}},
        {"title": "not in group", "type": "object", "additionalProperties": False, "required": ["not_in_group"],
         "properties": {"not_in_group": {"type": "integer"}}},
        {"title": "any", "type": "object", "additionalProperties": False, "required": ["any"],
         "properties": {"any": {"type": "array", "minItems": 1, "items": _CONDITION}}},
        {"title": "all", "type": "object", "additionalProperties": False, "required": ["all"],
         "properties": {"all": {"type": "array", "minItems": 1, "items": _CONDITION}}},
        {"title": "not", "type": "object", "additionalProperties": False, "required": ["not"],
         "properties": {"not": _CONDITION}},
    ],
}


@extend_schema_field({"type": "array", "maxItems": MAX_CONDITIONS, "items": SEGMENT_CONDITION,
                      "description": SEGMENT_HELP})
class SegmentFilterField(serializers.ListField):
    child = serializers.JSONField()


class CampaignStatusField(serializers.ChoiceField):
    """A campaign state (CampaignStatusEnum in the schema, named in ENUM_NAME_OVERRIDES)."""

    def __init__(self, **kwargs):
        super().__init__(choices=Campaign.Status.values, **kwargs)


def invalid(exc: services.CampaignInvalid) -> exceptions.ValidationError:
    """A service's "field: why" as a 422 on that field."""
    field, sep, why = exc.detail.partition(": ")
    if sep and field.isidentifier():
        return exceptions.ValidationError({field: [why]})
    return exceptions.ValidationError({"non_field_errors": [exc.detail]})


# campaigns


class CampaignOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    from_email = serializers.CharField()
    subject = serializers.SerializerMethodField(help_text="The first step's subject.")
    body_html = serializers.SerializerMethodField(help_text="The first step's HTML.")
    group_id = serializers.IntegerField(allow_null=True)
    segment_filter = SegmentFilterField()
    postal_address = serializers.CharField()
    status = CampaignStatusField(help_text=STATES)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    paused_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    steps_count = serializers.IntegerField()
    enrolled = serializers.IntegerField(help_text="Contacts enrolled at send (each gets each step at most once).")

    def _first(self, campaign) -> CampaignStep | None:
        return min(campaign.steps.all(), key=lambda step: step.position, default=None)

    def get_subject(self, campaign) -> str:
        first = self._first(campaign)
        return first.subject if first else ""

    def get_body_html(self, campaign) -> str:
        first = self._first(campaign)
        return first.body_html if first else ""


class CampaignPageOutput(serializers.Serializer):
    campaigns = CampaignOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()


class CampaignListQuery(page_query(size_name="page_size", default_size=20, max_size=100, name="CampaignPageQuery")):
    status = CampaignStatusField(required=False, help_text="Only this state.")


class CampaignUpdateInput(StrictInput):
    refused = {"status": "Use /send, /pause, /resume or /cancel.", "id": "Read-only.", "steps_count": "Read-only.",
               "enrolled": "Read-only.", "created_at": "Read-only."}

    name = serializers.CharField(max_length=200, required=False, validators=[one_line])
    from_email = serializers.CharField(max_length=320, required=False,
                                       help_text="This mailbox's address or one of its aliases (422 otherwise).")
    subject = serializers.CharField(max_length=998, required=False, validators=[one_line],
                                    help_text="The first step's subject; {{name}}, {{first_name}} and {{email}} are "
                                    "filled in per contact, with an optional fallback for an empty value: "
                                    "{{first_name|there}}.")
    body_html = serializers.CharField(max_length=MAX_BODY, required=False, trim_whitespace=False,
                                      help_text="The first step's HTML; the same placeholders (escaped).")
    group_id = serializers.IntegerField(required=False, allow_null=True,
                                        help_text="Only this group of the client's contacts (422 for any other id); "
                                        "null: every contact.")
    segment_filter = SegmentFilterField(required=False, max_length=MAX_CONDITIONS)
    postal_address = serializers.CharField(max_length=MAX_POSTAL, required=False, allow_blank=True,
                                           help_text="The sender's postal address, shown in every mail's footer; "
                                           "required before /send (422 there without it).")


class CampaignCreateInput(CampaignUpdateInput):
    name = serializers.CharField(max_length=200, validators=[one_line])
    from_email = serializers.CharField(max_length=320,
                                       help_text="This mailbox's address or one of its aliases (422 otherwise).")
    subject = serializers.CharField(max_length=998, validators=[one_line],
                                    help_text="The first step's subject; {{name}}, {{first_name}} and {{email}} are "
                                    "filled in per contact, with an optional fallback for an empty value: "
                                    "{{first_name|there}}.")
    body_html = serializers.CharField(max_length=MAX_BODY, trim_whitespace=False,
                                      help_text="The first step's HTML; the same placeholders (escaped).")


def campaigns_of(mailbox: Mailbox):
    def count(model):
        rows = model.objects.filter(campaign=OuterRef("pk")).order_by().values("campaign").annotate(n=Count("pk"))
        return Coalesce(Subquery(rows.values("n"), output_field=IntegerField()), 0)

    return (Campaign.objects.filter(mailbox=mailbox)
            .annotate(steps_count=count(CampaignStep), enrolled=count(Enrollment))
            .prefetch_related(Prefetch("steps", queryset=CampaignStep.objects.order_by("position"))))


def _own_address(mailbox: Mailbox, from_email: str) -> str:
    address = from_email.strip().lower()
    own = {mailbox.address.lower(), *(a.lower() for a in Alias.objects.filter(mailbox=mailbox)
                                      .values_list("address", flat=True))}
    if address not in own:
        raise exceptions.ValidationError({"from_email": [f"must be this mailbox's address ({mailbox.address}) or "
                                                         "one of its aliases"]})
    return address


class _CampaignApi(ClientBookApi):
    feature = "campaigns"

    def campaign(self, mailbox_id: int, campaign_id: int) -> Campaign:
        return campaigns_of(self.partner_mailbox(mailbox_id).mailbox).get(pk=campaign_id)

    def record(self, campaign: Campaign) -> dict:
        return CampaignOutput(campaigns_of(campaign.mailbox).get(pk=campaign.pk)).data

    def changes(self, partner_mailbox, data: dict) -> dict:
        """The validated fields as the services take them (group_id -> group, from_email checked)."""
        fields = dict(data)
        if "group_id" in fields:
            fields["group"] = group_of(self.client_book(partner_mailbox), fields.pop("group_id"))
        if "from_email" in fields:
            fields["from_email"] = _own_address(partner_mailbox.mailbox, fields["from_email"])
        return fields


class HostingCampaignListApi(_CampaignApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaigns_list", parameters=[CampaignListQuery],
                   responses={200: CampaignPageOutput}, summary="List the mailbox's campaigns, newest first",
                   description=GATE)
    def get(self, request, mailbox_id: int):
        mailbox = self.partner_mailbox(mailbox_id).mailbox
        query = CampaignListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, page_size = query.validated_data["page"], query.validated_data["page_size"]
        rows = campaigns_of(mailbox)
        if "status" in query.validated_data:
            rows = rows.filter(status=query.validated_data["status"])
        return Response(CampaignPageOutput({"campaigns": page_window(rows, page=page, size=page_size),
                                            "total": rows.count(), "page": page, "page_size": page_size}).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaigns_create", request=CampaignCreateInput,
                   responses={201: CampaignOutput}, summary="Create a campaign (a draft with its first step)",
                   description="A campaign starts as a single send; add steps to make it a drip sequence. 422: a "
                   "field is missing, too long or unknown, from_email is not this mailbox's, group_id is not a group "
                   "of the client's contacts, or segment_filter is malformed (the message says where). " + GATE)
    def post(self, request, mailbox_id: int):
        partner_mailbox = self.partner_mailbox(mailbox_id)
        book = self.client_book(partner_mailbox)
        data = CampaignCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = self.changes(partner_mailbox, data.validated_data)
        try:
            campaign = services.campaign_create(mailbox=partner_mailbox.mailbox, book=book, **fields)
        except services.CampaignInvalid as exc:
            raise invalid(exc) from None
        return Response(self.record(campaign), status=201)


class HostingCampaignDetailApi(_CampaignApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaigns_retrieve", responses={200: CampaignOutput},
                   summary="One campaign", description=STATES + " " + GATE)
    def get(self, request, mailbox_id: int, campaign_id: int):
        return Response(CampaignOutput(self.campaign(mailbox_id, campaign_id)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaigns_update", request=CampaignUpdateInput,
                   responses={200: CampaignOutput}, summary="Change a draft campaign",
                   description="Fields left out keep their value; subject and body_html change the first step. 409: "
                   "the campaign is no longer a draft. 422 as for create. " + GATE)
    def patch(self, request, mailbox_id: int, campaign_id: int):
        partner_mailbox = self.partner_mailbox(mailbox_id)
        campaign = campaigns_of(partner_mailbox.mailbox).get(pk=campaign_id)
        data = CampaignUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = self.changes(partner_mailbox, data.validated_data)
        try:
            campaign = services.campaign_update(campaign=campaign, **fields)
        except services.CampaignInvalid as exc:
            raise invalid(exc) from None
        return Response(self.record(campaign))

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaigns_delete", responses={204: None},
                   summary="Delete a campaign with its steps and history",
                   description="409 while sending: pause or cancel it first. " + GATE)
    def delete(self, request, mailbox_id: int, campaign_id: int):
        services.campaign_delete(campaign=self.campaign(mailbox_id, campaign_id))
        return Response(status=204)


# steps


class StepOutput(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField(help_text="1 for the first step, in sending order.")
    delay_hours = serializers.IntegerField(help_text="Hours after the previous step (the first: after enrolment).")
    subject = serializers.CharField()
    subject_b = serializers.CharField(help_text="The B variant's subject; empty: no A/B test.")
    ab_split_percent = serializers.IntegerField(help_text="Percent of contacts that get subject A.")
    body_html = serializers.CharField()
    created_at = serializers.DateTimeField()


class StepUpdateInput(StrictInput):
    refused = {"id": "Read-only.", "position": "Steps keep their order; delete and add to reorder.",
               "created_at": "Read-only."}

    delay_hours = serializers.IntegerField(min_value=0, max_value=MAX_DELAY_HOURS, required=False,
                                           help_text=f"0 to {MAX_DELAY_HOURS}: hours after the previous step was due "
                                           "(the first step: after enrolment).")
    subject = serializers.CharField(max_length=998, required=False, validators=[one_line],
                                    help_text="Subject A; {{name}}, {{first_name}}, {{email}} are filled in "
                                    "({{first_name|there}}: a fallback for an empty value).")
    subject_b = serializers.CharField(max_length=998, required=False, allow_blank=True, validators=[one_line],
                                      help_text="Subject B for an A/B test; empty: everyone gets subject A.")
    ab_split_percent = serializers.IntegerField(min_value=0, max_value=100, required=False,
                                                help_text="0 to 100: percent of contacts that get subject A (the "
                                                "rest get B); chosen per contact by a hash, the same every time.")
    body_html = serializers.CharField(max_length=MAX_BODY, required=False, trim_whitespace=False)


class StepCreateInput(StepUpdateInput):
    delay_hours = serializers.IntegerField(min_value=0, max_value=MAX_DELAY_HOURS, default=0,
                                           help_text=f"0 to {MAX_DELAY_HOURS}, default 0: hours after the previous "
                                           "step was due.")
    subject = serializers.CharField(max_length=998, validators=[one_line],
                                    help_text="Subject A; {{name}}, {{first_name}}, {{email}} are filled in "
                                    "({{first_name|there}}: a fallback for an empty value).")
    ab_split_percent = serializers.IntegerField(min_value=0, max_value=100, default=50,
                                                help_text="0 to 100, default 50: percent of contacts that get subject "
                                                "A.")
    body_html = serializers.CharField(max_length=MAX_BODY, trim_whitespace=False)


class HostingStepListApi(_CampaignApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaign_steps_list",
                   responses={200: StepOutput(many=True)}, summary="List a campaign's steps in order", description=GATE)
    def get(self, request, mailbox_id: int, campaign_id: int):
        campaign = self.campaign(mailbox_id, campaign_id)
        return Response(StepOutput(campaign.steps.order_by("position"), many=True).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaign_steps_create", request=StepCreateInput,
                   responses={201: StepOutput}, summary="Add a step after the last one",
                   description="On a sending, paused or completed campaign, contacts that already got every step get "
                   "this one too, delay_hours after their last step was due (a completed campaign goes back to "
                   "sending). 409: the campaign is cancelled. " + GATE)
    def post(self, request, mailbox_id: int, campaign_id: int):
        campaign = self.campaign(mailbox_id, campaign_id)
        data = StepCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        step = services.step_add(campaign=campaign, **data.validated_data)
        return Response(StepOutput(step).data, status=201)


class HostingStepDetailApi(_CampaignApi):
    def step(self, mailbox_id: int, campaign_id: int, step_id: int) -> CampaignStep:
        return self.campaign(mailbox_id, campaign_id).steps.select_related("campaign").get(pk=step_id)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaign_steps_update", request=StepUpdateInput,
                   responses={200: StepOutput}, summary="Change a step that has not gone out",
                   description="Fields left out keep their value. 409: the step went out to some contacts already "
                   "(add a new step instead), or the campaign is cancelled. " + GATE)
    def patch(self, request, mailbox_id: int, campaign_id: int, step_id: int):
        step = self.step(mailbox_id, campaign_id, step_id)
        data = StepUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(StepOutput(services.step_update(step=step, **data.validated_data)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaign_steps_delete", responses={204: None},
                   summary="Delete a step that has not gone out",
                   description="Later steps move up. 409: the step went out already, it is the campaign's only step, "
                   "or the campaign is cancelled. " + GATE)
    def delete(self, request, mailbox_id: int, campaign_id: int, step_id: int):
        services.step_delete(step=self.step(mailbox_id, campaign_id, step_id))
        return Response(status=204)


# actions and stats


class _ActionApi(_CampaignApi):
    def act(self, mailbox_id: int, campaign_id: int, action) -> Response:
        campaign = self.campaign(mailbox_id, campaign_id)
        try:
            action(campaign=campaign)
        except services.CampaignInvalid as exc:
            raise invalid(exc) from None
        return Response(self.record(campaign))


def _action(name: str, summary: str, description: str):
    return extend_schema(tags=[TAG], operation_id=f"hosting_mailbox_campaigns_{name}", request=None,
                         responses={200: CampaignOutput}, summary=summary,
                         description=description + " " + STATES + " " + GATE)


class HostingCampaignSendApi(_ActionApi):
    @_action("send", "Start sending a draft",
             "Enrols the audience once (its group and segment_filter, contacts with an address; suppressed "
             "addresses such as unsubscribes and hard bounces are left out) and schedules each contact's first "
             "step; the sending engine sends due steps within its sweep interval, within the mailbox's send quota "
             "(mail waits for the next hour rather than failing). An empty audience completes at once. 409: not a "
             "draft, or the mailbox is switched off. 422: postal_address is not set.")
    def post(self, request, mailbox_id: int, campaign_id: int):
        return self.act(mailbox_id, campaign_id, services.campaign_send)


class HostingCampaignPauseApi(_ActionApi):
    @_action("pause", "Pause a sending campaign", "No further delivery starts once this returns. 409: not sending.")
    def post(self, request, mailbox_id: int, campaign_id: int):
        return self.act(mailbox_id, campaign_id, services.campaign_pause)


class HostingCampaignResumeApi(_ActionApi):
    @_action("resume", "Resume a paused campaign",
             "Carries on where it stopped: steps that fell due while paused go out now, in order, and nobody gets "
             "a step twice. 409: not paused.")
    def post(self, request, mailbox_id: int, campaign_id: int):
        return self.act(mailbox_id, campaign_id, services.campaign_resume)


class HostingCampaignCancelApi(_ActionApi):
    @_action("cancel", "Cancel a campaign for good",
             "Pending deliveries are dropped; what was sent stays in the stats. 409: completed or cancelled already.")
    def post(self, request, mailbox_id: int, campaign_id: int):
        return self.act(mailbox_id, campaign_id, services.campaign_cancel)


COUNT_HELP = {
    "sent": "Handed to the sending path.",
    "delivered": "Accepted by the recipient's server.",
    "bounced": "Bounced (hard or soft).",
    "opened": "Approximate (see opened_approximate): tracking-pixel loads, which image proxies fetch on delivery "
              "whether or not a person reads the mail, and which clients blocking images never make.",
    "clicked": "A tracked link was followed.",
    "unsubscribed": "Unsubscribed from this mail's link.",
    "complained": "Reported as spam (feedback loop).",
}


def _counts(names) -> dict:
    return {name: serializers.IntegerField(help_text=COUNT_HELP.get(name, "")) for name in names}


OUTCOMES = ("delivered", "bounced", "opened", "clicked", "unsubscribed", "complained")
VariantStatsOutput = type("CampaignVariantStats", (serializers.Serializer,), {
    "subject": serializers.CharField(), **_counts(("sent", *OUTCOMES))})
VariantsOutput = type("CampaignStepVariants", (serializers.Serializer,), {
    "a": VariantStatsOutput(), "b": VariantStatsOutput(required=False, help_text="Only with an A/B test.")})
StepStatsOutput = type("CampaignStepStats", (serializers.Serializer,), {
    "step_id": serializers.IntegerField(), "position": serializers.IntegerField(), "subject": serializers.CharField(),
    "subject_b": serializers.CharField(), "ab_split_percent": serializers.IntegerField(),
    "enrolled": serializers.IntegerField(help_text="Contacts that reached this step (due or not)."),
    **_counts(("pending", "sent", "skipped", "failed", *OUTCOMES)), "variants": VariantsOutput()})
TotalsOutput = type("CampaignStatsTotals", (serializers.Serializer,), {
    "enrolled": serializers.IntegerField(help_text="Contacts enrolled at send."),
    **_counts(("active", "completed", "stopped", "pending", "sent", "skipped", "failed", *OUTCOMES))})


class CampaignStatsOutput(serializers.Serializer):
    campaign_id = serializers.IntegerField()
    status = CampaignStatusField()
    opened_approximate = serializers.BooleanField(help_text="Always true: opens are counted from tracking-pixel loads; "
                                                  "image proxies (Gmail, Apple Mail Privacy Protection) load it on "
                                                  "delivery, so opens run high; clients that block images run low.")
    totals = TotalsOutput()
    steps = StepStatsOutput(many=True)


class HostingCampaignStatsApi(_CampaignApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_campaigns_stats", responses={200: CampaignStatsOutput},
                   summary="A campaign's numbers: totals, per step and per A/B variant",
                   description="Counts, not rates. Per step: contacts that reached it, pending, sent, skipped "
                   "(stopped, suppressed or cancelled), failed, and among the sent what became of them; per variant "
                   "(chosen when a step is sent) the sent mail and its outcomes. " + GATE)
    def get(self, request, mailbox_id: int, campaign_id: int):
        return Response(CampaignStatsOutput(campaign_stats(self.campaign(mailbox_id, campaign_id))).data)
