"""Portal pages for a client mailbox's campaigns: the list, create, edit while a draft, one campaign's
page (its steps with a sandboxed preview each, add/edit/delete steps while allowed, send, pause,
resume, cancel, stats per step and A/B variant as bar charts with a table, a test send to one
address), delete.

They call the same campaigns services as /v1/hosting/mailboxes/{id}/campaigns; the audience
is the client's book (contacts.services.client_address_book). The mailbox's plan must
include campaigns; another partner's mailbox, campaign or step is 404. A step's HTML is only ever
shown sanitized (mailcore.sanitize, as the webmail does) in `<iframe sandbox srcdoc>` without
allow-scripts or allow-same-origin."""
import json
import re

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.csp import CSP
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from campaigns.models import Campaign, CampaignStep, StepDelivery
from campaigns.services import (
    CampaignInvalid, CampaignState, audience, campaign_cancel, campaign_create, campaign_delete, campaign_pause,
    campaign_resume, campaign_send, campaign_update, step_add, step_delete, step_update,
)
from campaigns.stats import campaign_stats
from campaigns.testsend import (
    BUILT_IN_SAMPLE,
    campaign_sample_contact,
    campaign_step_request,
    campaign_test_send,
)
from contacts.models import AddressBook, Contact
from contacts.selectors import book_groups
from mailcore.errors import DomainError, InvalidFields
from mailcore.inbox.display import frame_document
from mailcore.partners.models import PartnerMailbox
from mailcore.sanitize import sanitize_mail_html
from portal.htmx import regions
from portal.access import found_or_404
from portal.forms import PortalForm
from portal.partner.partner_contacts import client_mailbox_page

LIST_TEMPLATE = "portal/campaigns/list.html"
FORM_TEMPLATE = "portal/campaigns/form.html"
DETAIL_TEMPLATE = "portal/campaigns/detail.html"
STEP_TEMPLATE = "portal/campaigns/step.html"
CONFIRM_TEMPLATE = "portal/campaigns/confirm.html"

# The preview frame: links open in a new, normal tab; no scripts, same origin, forms or top navigation.
FRAME_SANDBOX = "allow-popups allow-popups-to-escape-sandbox"
# The chart's rows per step or variant: (key in campaign_stats, label, bar tone).
CHART_ROWS = (("sent", "Sent", "primary"), ("delivered", "Delivered", "ok"), ("bounced", "Bounced", "danger"),
              ("opened", "Opened (approximate)", "info"), ("clicked", "Clicked", "info"),
              ("unsubscribed", "Unsubscribed", "warn"), ("complained", "Complained", "danger"))
ACTIONS = {"send": campaign_send, "pause": campaign_pause, "resume": campaign_resume, "cancel": campaign_cancel}
CONFIRMED_ACTIONS = ("send", "cancel")  # asked first (hx-confirm, or a page without JavaScript)

campaigns_page = client_mailbox_page("campaigns", "Campaigns")


def _url(partner_mailbox: PartnerMailbox, name: str, **kwargs) -> str:
    return reverse(f"portal:{name}", kwargs={"mailbox_id": partner_mailbox.pk, **kwargs})


def _campaign_url(partner_mailbox: PartnerMailbox, campaign: Campaign, anchor: str = "") -> str:
    url = _url(partner_mailbox, "mailbox-campaign", campaign_id=campaign.pk)
    return f"{url}#{anchor}" if anchor else url


def _done(request, url: str):
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# forms


class CampaignForm(PortalForm):
    name = forms.CharField(label="Campaign name", max_length=200, help_text="For you; recipients don't see it.")
    from_email = forms.ChoiceField(label="From")
    subject = forms.CharField(label="Subject", max_length=998,
                              help_text="{{first_name}}, {{name}} and {{email}} are filled in per contact.")
    body_html = forms.CharField(label="Message (HTML)", strip=False,
                                widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "true", "class": "mono"}))
    group = forms.TypedChoiceField(label="Send to", coerce=int, empty_value=None, required=False)
    segment_filter = forms.CharField(
        label="Segment filter (JSON)", required=False, strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "class": "mono",
                                     "placeholder": '[{"field": "company", "op": "contains", "value": "bakery"}]'}),
        help_text="Optional: only the contacts that match every condition. Fields: name, email, company, phone, "
                  "notes, created_at; also {\"in_group\": id}, {\"any\": [...]}, {\"not\": {...}}.")
    postal_address = forms.CharField(label="Sender's postal address", required=False, max_length=500,
                                     widget=forms.Textarea(attrs={"rows": 2}),
                                     help_text="Shown in every message's footer; required before sending.")

    def __init__(self, *args, mailbox, book: AddressBook, **kwargs):
        super().__init__(*args, **kwargs)
        # mail_send sends only from a mailbox's own address, so that is the one choice.
        self.fields["from_email"].choices = [(mailbox.address, mailbox.address)]
        self.fields["group"].choices = [("", f"All of {book.client.name}'s contacts"),
                                        *((group.pk, f"Group: {group.name}") for group in book_groups(book=book))]

    def clean_segment_filter(self):
        text = self.cleaned_data["segment_filter"].strip()
        if not text:
            return []
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
        if not isinstance(value, list):
            raise ValidationError("Write a list of conditions: [ {…}, {…} ].")
        return value

    def add_campaign_error(self, exc: CampaignInvalid) -> None:
        """The service's "field: message" next to its field (group_id is the group select here)."""
        name, _, message = exc.detail.partition(": ")
        name = {"group_id": "group"}.get(name, name)
        if message and name in self.fields:
            self.add_error(name, message[:1].upper() + message[1:])
        else:
            self.add_error(None, exc.detail)


class StepForm(PortalForm):
    delay_hours = forms.IntegerField(label="Wait (hours)", min_value=0, max_value=24 * 365, initial=24,
                                     help_text="After the previous step (after sending, for the first).")
    subject = forms.CharField(label="Subject", max_length=998)
    subject_b = forms.CharField(label="Subject B (A/B test)", max_length=998, required=False,
                                help_text="Optional: a second subject, tried on part of the contacts.")
    ab_split_percent = forms.IntegerField(label="Contacts who get subject A (%)", min_value=0, max_value=100,
                                          initial=50)
    body_html = forms.CharField(label="Message (HTML)", strip=False,
                                widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "true", "class": "mono"}))


class TestSendForm(PortalForm):
    to = forms.EmailField(label="Send a test to", max_length=320,
                          widget=forms.EmailInput(attrs={"autocomplete": "email", "placeholder": "you@example.com"}))
    step = forms.TypedChoiceField(label="Step", coerce=int)
    variant = forms.ChoiceField(label="Subject variant", choices=[("a", "A"), ("b", "B (steps with an A/B test)")],
                                initial="a")

    def __init__(self, *args, steps, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["step"].choices = [(step.pk, f"Step {step.position}: {step.subject}") for step in steps]
        if not any(step.subject_b for step in steps):
            del self.fields["variant"]


# reads


def _campaigns(partner_mailbox: PartnerMailbox):
    return Campaign.objects.filter(mailbox=partner_mailbox.mailbox).annotate(
        enrolled=Count("enrollments", distinct=True),
        sent=Count("enrollments__deliveries", filter=Q(enrollments__deliveries__status=StepDelivery.Status.SENT),
                   distinct=True),
        step_count=Count("steps", distinct=True))


def _campaign(partner_mailbox: PartnerMailbox, campaign_id: int) -> Campaign:
    return found_or_404(Campaign.objects.select_related("group", "book__client", "account").get, "campaign",
                        mailbox=partner_mailbox.mailbox, pk=campaign_id)


def _step(campaign: Campaign, step_id: int) -> CampaignStep:
    return found_or_404(CampaignStep.objects.get, "step", campaign=campaign, pk=step_id)


def _bars(counts: dict, base: int) -> list[dict]:
    return [{"key": key, "label": label, "tone": tone, "count": counts.get(key, 0),
             "percent": (100.0 * counts.get(key, 0) / base) if base else 0.0}
            for key, label, tone in CHART_ROWS]


def _chart(stats: dict) -> list[dict]:
    """Per step, then per variant: bars scaled to what reached the step (enrolled), so each chart reads
    as shares of its own audience."""
    charts = []
    for step in stats["steps"]:
        base = max(step["enrolled"], step["sent"], 1)
        variants = []
        if step["subject_b"]:
            for name, counts in step["variants"].items():
                variant_base = max(counts["sent"], 1)
                variants.append({"name": name.upper(), "subject": counts["subject"], "sent": counts["sent"],
                                 "bars": _bars(counts, variant_base),
                                 "rate": {key: round(100.0 * counts[key] / counts["sent"], 1) if counts["sent"] else None
                                          for key in ("opened", "clicked")}})
        table = [{"label": label, "all": step[key],
                  "variants": [counts.get(key, 0) for counts in step["variants"].values()] if variants else []}
                 for key, label, _ in CHART_ROWS]
        charts.append({**step, "bars": _bars(step, base), "variant_charts": variants, "table": table,
                       "variant_names": [name.upper() for name in step["variants"]] if variants else []})
    return charts


_UNSUBSCRIBE_LINK = re.compile(re.escape(settings.PUBLIC_BASE_URL.rstrip("/")) + r"/u/[^\"'<>\s]*")


def _preview(campaign: Campaign, step: CampaignStep, sample: Contact) -> tuple[str, str]:
    """The step's subject and body as `sample` would get them (personalised, with the bulk-mail footer),
    the body sanitized, as the whole document of a sandboxed frame."""
    to = sample.email or f"someone@{campaign.from_email.rpartition('@')[2] or 'example.com'}"
    try:
        request = campaign_step_request(campaign=campaign, step=step, to=to)
        subject, body = request.subject, request.body_html
    except (DomainError, ValueError):
        subject, body = step.subject, step.body_html
    # The footer's unsubscribe link would really unsubscribe the sample contact: the preview shows it inert.
    body = _UNSUBSCRIBE_LINK.sub("#", body)
    clean = sanitize_mail_html(body, allow_remote_images=True, for_frame=True)
    return subject, frame_document(clean.html, remote_images=True)


def _editable_steps(campaign: Campaign) -> set[int]:
    """The steps that may still change: none has gone out, and the campaign is not cancelled."""
    if campaign.status == Campaign.Status.CANCELLED:
        return set()
    gone = set(StepDelivery.objects.filter(step__campaign=campaign).exclude(status=StepDelivery.Status.PENDING)
               .values_list("step_id", flat=True).distinct())
    return {pk for pk in campaign.steps.values_list("pk", flat=True) if pk not in gone}


def _detail_context(partner_mailbox: PartnerMailbox, campaign: Campaign, **forms_) -> dict:
    steps = list(campaign.steps.order_by("position"))
    sample = campaign_sample_contact(campaign=campaign)
    editable = _editable_steps(campaign)
    for step in steps:
        step.preview_subject, step.frame_html = _preview(campaign, step, sample)
        step.editable = step.pk in editable
        step.subject_a_percent = step.ab_split_percent
        step.subject_b_percent = 100 - step.ab_split_percent
    stats = campaign_stats(campaign)
    return {
        "partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "campaign": campaign,
        "client": campaign.book.client, "steps": steps, "sample": sample,
        "sample_is_built_in": sample is BUILT_IN_SAMPLE, "stats": stats, "charts": _chart(stats),
        "frame_sandbox": FRAME_SANDBOX, "can_delete_steps": len(steps) > 1,
        "audience_size": audience(campaign=campaign).count() if campaign.status == Campaign.Status.DRAFT else None,
        "step_form": forms_.get("step_form") or StepForm(auto_id="id_step_%s"),
        "test_form": forms_.get("test_form") or TestSendForm(steps=steps, auto_id="id_test_%s",
                                                             initial={"to": forms_.get("test_to", "")}),
        "test_sent_to": forms_.get("test_sent_to"),
        "can_add_steps": campaign.status != Campaign.Status.CANCELLED,
    }


def _render_detail(request, partner_mailbox, campaign, *, status: int = 200, **forms_):
    response = render(request, DETAIL_TEMPLATE, _detail_context(partner_mailbox, campaign, **forms_), status=status)
    response._csp_config = _page_policy()
    return response


def _page_policy() -> dict:
    """The site's CSP, with https: images: the previews show the campaign's own pictures (sanitized
    frames inherit the page's policy and add their own, which allows the same)."""
    return {**settings.SECURE_CSP, "img-src": [CSP.SELF, "data:", "https:"]}


# the list, create, edit, delete


@require_GET
@campaigns_page
def campaigns(request, partner_mailbox, book):
    rows = list(_campaigns(partner_mailbox))
    return render(request, LIST_TEMPLATE, {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox,
                                           "book": book, "client": book.client, "campaigns": rows,
                                           "contact_count": Contact.objects.filter(book=book).count()})


def _form_context(partner_mailbox, book, form, campaign=None) -> dict:
    return {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "book": book,
            "client": book.client, "form": form, "campaign": campaign}


@require_http_methods(["GET", "POST"])
@campaigns_page
def campaign_new(request, partner_mailbox, book):
    """A draft with its first step; errors come back next to their fields and nothing is created."""
    mailbox = partner_mailbox.mailbox
    form = CampaignForm(request.POST if request.method == "POST" else None, mailbox=mailbox, book=book,
                        initial={"from_email": mailbox.address})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        group = book_groups(book=book).filter(pk=data["group"]).first() if data["group"] else None
        try:
            campaign = campaign_create(mailbox=mailbox, book=book, from_email=data["from_email"], name=data["name"],
                                       subject=data["subject"], body_html=data["body_html"], group=group,
                                       segment_filter=data["segment_filter"], postal_address=data["postal_address"])
        except CampaignInvalid as exc:
            form.add_campaign_error(exc)
        else:
            messages.success(request, f"Draft {campaign.name} created. Add more steps, send yourself a test, then "
                                      "send it.")
            return _done(request, _campaign_url(partner_mailbox, campaign))
    context = _form_context(partner_mailbox, book, form)
    if request.htmx and request.method == "POST":
        return regions(request, FORM_TEMPLATE, ["campaign-form"], context)
    return render(request, FORM_TEMPLATE, context, status=422 if request.method == "POST" else 200)


@require_http_methods(["GET", "POST"])
@campaigns_page
def campaign_edit(request, partner_mailbox, book, campaign_id: int):
    """Change a draft (its first step's subject and message too)."""
    campaign = _campaign(partner_mailbox, campaign_id)
    if campaign.status != Campaign.Status.DRAFT:
        messages.error(request, f"A {campaign.get_status_display().lower()} campaign can no longer be changed; "
                                "only drafts can.")
        return _done(request, _campaign_url(partner_mailbox, campaign))
    first = campaign.steps.order_by("position").first()
    initial = {"name": campaign.name, "from_email": campaign.from_email, "subject": first.subject if first else "",
               "body_html": first.body_html if first else "", "group": campaign.group_id,
               "segment_filter": json.dumps(campaign.segment_filter, indent=2) if campaign.segment_filter else "",
               "postal_address": campaign.postal_address}
    form = CampaignForm(request.POST if request.method == "POST" else None, mailbox=partner_mailbox.mailbox,
                        book=book, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        group = book_groups(book=book).filter(pk=data["group"]).first() if data["group"] else None
        try:
            campaign_update(campaign=campaign, name=data["name"], from_email=data["from_email"],
                            subject=data["subject"], body_html=data["body_html"], group=group,
                            segment_filter=data["segment_filter"], postal_address=data["postal_address"])
        except CampaignInvalid as exc:
            form.add_campaign_error(exc)
        except CampaignState as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, f"{data['name']} saved.")
            return _done(request, _campaign_url(partner_mailbox, campaign))
    context = _form_context(partner_mailbox, book, form, campaign)
    if request.htmx and request.method == "POST":
        return regions(request, FORM_TEMPLATE, ["campaign-form"], context)
    return render(request, FORM_TEMPLATE, context, status=422 if request.method == "POST" else 200)


@require_http_methods(["GET", "POST"])
@campaigns_page
def campaign_remove(request, partner_mailbox, book, campaign_id: int):
    campaign = _campaign(partner_mailbox, campaign_id)
    context = {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "campaign": campaign,
               "action": "delete"}
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, context)
    try:
        campaign_delete(campaign=campaign)
    except CampaignState as exc:
        messages.error(request, exc.detail)
        return _done(request, _campaign_url(partner_mailbox, campaign))
    messages.success(request, f"Campaign {campaign.name} deleted.")
    return _done(request, _url(partner_mailbox, "mailbox-campaigns"))


# one campaign


@require_GET
@campaigns_page
def campaign_detail(request, partner_mailbox, book, campaign_id: int):
    return _render_detail(request, partner_mailbox, _campaign(partner_mailbox, campaign_id))


@require_http_methods(["GET", "POST"])
@campaigns_page
def campaign_action(request, partner_mailbox, book, campaign_id: int, action: str):
    """Send, pause, resume or cancel. Send and cancel are confirmed first: GET shows the question
    (without JavaScript; htmx asks with hx-confirm)."""
    campaign = _campaign(partner_mailbox, campaign_id)
    if action not in ACTIONS or (request.method == "GET" and action not in CONFIRMED_ACTIONS):
        return redirect(_campaign_url(partner_mailbox, campaign))
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {
            "partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "campaign": campaign,
            "action": action, "audience_size": audience(campaign=campaign).count()})
    try:
        result = ACTIONS[action](campaign=campaign)
    except (CampaignState, CampaignInvalid) as exc:
        detail = exc.detail.partition(": ")[2] if exc.detail.startswith("postal_address: ") else exc.detail
        messages.error(request, detail[:1].upper() + detail[1:])
        return _done(request, _campaign_url(partner_mailbox, campaign))
    if action == "send":
        messages.success(request, f"{campaign.name} is sending to {result} contact{'s' if result != 1 else ''}."
                         if result else f"{campaign.name} had nobody to send to (no contacts match, or all are "
                                        "suppressed); it is complete.")
    else:
        done = {"pause": "paused: nothing more goes out until you resume it",
                "resume": "resumed: it carries on where it stopped",
                "cancel": "cancelled: nothing more goes out"}[action]
        messages.success(request, f"{campaign.name} {done}.")
    return _done(request, _campaign_url(partner_mailbox, campaign))


@require_POST
@campaigns_page
def campaign_test(request, partner_mailbox, book, campaign_id: int):
    """Send one step to one address, marked [Test]: nobody is enrolled and the stats don't change."""
    campaign = _campaign(partner_mailbox, campaign_id)
    steps = list(campaign.steps.order_by("position"))
    form = TestSendForm(request.POST, steps=steps, auto_id="id_test_%s")
    sent_to = None
    if form.is_valid():
        data = form.cleaned_data
        step = next(step for step in steps if step.pk == data["step"])
        try:
            campaign_test_send(campaign=campaign, step=step, to=data["to"], variant=data.get("variant") or "a")
        except InvalidFields as exc:
            form.add_service_error(exc)
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            sent_to = data["to"]
            messages.success(request, f"Test of step {step.position} sent to {sent_to}.")
    if request.htmx:
        context = _detail_context(partner_mailbox, campaign, test_form=None if sent_to else form,
                                  test_to=sent_to or "", test_sent_to=sent_to)
        response = regions(request, DETAIL_TEMPLATE, ["campaign-test"], context)
        return response
    if sent_to:
        return redirect(_campaign_url(partner_mailbox, campaign, "campaign-test"))
    return _render_detail(request, partner_mailbox, campaign, status=422, test_form=form)


# steps


def _step_values(form: StepForm) -> dict:
    data = form.cleaned_data
    return {"delay_hours": data["delay_hours"], "subject": data["subject"], "subject_b": data["subject_b"],
            "ab_split_percent": data["ab_split_percent"], "body_html": data["body_html"]}


@require_POST
@campaigns_page
def step_new(request, partner_mailbox, book, campaign_id: int):
    campaign = _campaign(partner_mailbox, campaign_id)
    form = StepForm(request.POST, auto_id="id_step_%s")
    if form.is_valid():
        try:
            step = step_add(campaign=campaign, **_step_values(form))
        except CampaignState as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, f"Step {step.position} added.")
            return _done(request, _campaign_url(partner_mailbox, campaign, f"step-{step.pk}"))
    return _render_detail(request, partner_mailbox, campaign, status=422, step_form=form)


@require_http_methods(["GET", "POST"])
@campaigns_page
def step_edit(request, partner_mailbox, book, campaign_id: int, step_id: int):
    campaign = _campaign(partner_mailbox, campaign_id)
    step = _step(campaign, step_id)
    initial = {name: getattr(step, name) for name in ("delay_hours", "subject", "subject_b", "ab_split_percent",
                                                       "body_html")}
    form = StepForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            step_update(step=step, **_step_values(form))
        except CampaignState as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, f"Step {step.position} saved.")
            return _done(request, _campaign_url(partner_mailbox, campaign, f"step-{step.pk}"))
    context = {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "campaign": campaign,
               "step": step, "form": form, "editable": step.pk in _editable_steps(campaign)}
    if request.htmx and request.method == "POST":
        return regions(request, STEP_TEMPLATE, ["step-form"], context)
    return render(request, STEP_TEMPLATE, context, status=422 if request.method == "POST" else 200)


@require_http_methods(["GET", "POST"])
@campaigns_page
def step_remove(request, partner_mailbox, book, campaign_id: int, step_id: int):
    campaign = _campaign(partner_mailbox, campaign_id)
    step = _step(campaign, step_id)
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox,
                                                  "campaign": campaign, "step": step, "action": "delete-step"})
    try:
        step_delete(step=step)
    except CampaignState as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Step {step.position} deleted; the steps after it moved up.")
    return _done(request, _campaign_url(partner_mailbox, campaign, "steps"))
