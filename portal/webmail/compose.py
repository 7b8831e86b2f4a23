"""Writing mail in the webmail: a new message, a reply, a reply to all, a forward or a draft; plain
text in a textarea (no JavaScript needed, attachments as file inputs of the multipart POST) or rich
text in the vendored Squire editor; drafts kept in the Drafts folder (saved with a button, or every
few seconds and on leaving by static/js/webmail-compose.js); sending through mail_send's hold queue
(undo window, send later) with the page that takes it back.

Everything is done by mailcore.sending (drafts, replies, recipients); this module parses the form,
calls one service and renders."""
from datetime import UTC
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from mailcore.errors import DomainError, InvalidFields
from mailcore.inbox.services import inbox_message
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.compose import header_problem, html_to_text
from webmail.drafts import (
    Composition,
    attachment_file,
    attachments_gather,
    draft_discard,
    draft_open,
    draft_save,
    draft_send,
    send_undo,
    sent_message_get,
)
from mailcore.sending.failures import failure_summary, send_failure_dismiss, send_failure_for_draft
from webmail.recipients import recipient_suggestions
from webmail.replies import FORWARD, REPLY, REPLY_ALL, reply_start
from mailcore.sending.services import MAX_UNSEND_WINDOW, MailboxLocked
from mailcore.store.base import FolderNotFound, MessageNotFound, QuotaExceeded, StoreError
from portal.webmail.access import owner_required

UNDO_COOKIE = "mw_undo"
UNDO_DEFAULT = 10
UNDO_CHOICES = [(0, "Off: send at once"), (5, "5 seconds"), (10, "10 seconds"), (20, "20 seconds"),
                (30, "30 seconds")]
assert max(seconds for seconds, _ in UNDO_CHOICES) <= MAX_UNSEND_WINDOW
SUGGESTIONS_SHOWN = 20  # in the page's datalist before anything is typed
# Where mail_send's and the draft checks' field errors are shown (None: above the form).
ERROR_FIELDS = {"to": "to", "cc": "cc", "bcc": "bcc", "subject": "subject", "body_html": "body",
                "body_text": "body", "attachments": "files", "scheduled_at": "send_at", "unsend_window": "undo"}


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class FilesField(forms.FileField):
    """Any number of files from one <input type=file multiple>."""

    def __init__(self, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        super().__init__(**kwargs)

    def clean(self, data, initial=None):
        one = super().clean
        if isinstance(data, (list, tuple)):
            return [one(item, initial) for item in data if item]
        return [one(data, initial)] if data else []


class IndexesField(forms.Field):
    """The attachments kept (checkbox values: their part index in the draft or the original)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        values = value if isinstance(value, (list, tuple)) else [value] if value not in (None, "") else []
        try:
            indexes = [int(item) for item in values]
        except (TypeError, ValueError):
            raise ValidationError("Pick attachments from the list.") from None
        if any(index < 0 for index in indexes):
            raise ValidationError("Pick attachments from the list.")
        return indexes


class ComposeForm(forms.Form):
    to = forms.CharField(label="To", required=False, max_length=4000)
    cc = forms.CharField(label="Cc", required=False, max_length=4000)
    bcc = forms.CharField(label="Bcc", required=False, max_length=4000)
    subject = forms.CharField(label="Subject", required=False, max_length=998)
    body = forms.CharField(label="Message", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 16}))
    body_html = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    format = forms.ChoiceField(choices=[("plain", "Plain text"), ("rich", "Rich text")], required=False,
                               widget=forms.HiddenInput)
    draft = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    keep = IndexesField(required=False)
    forward_folder = forms.CharField(required=False, max_length=1000, widget=forms.HiddenInput)
    forward_uid = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    forward_keep = IndexesField(required=False)
    in_reply_to = forms.CharField(required=False, max_length=1000, widget=forms.HiddenInput)
    references = forms.CharField(required=False, max_length=4000, widget=forms.HiddenInput)
    files = FilesField(label="Attach files", required=False)
    undo = forms.TypedChoiceField(label="Undo send", choices=UNDO_CHOICES, coerce=int, required=False,
                                  empty_value=UNDO_DEFAULT,
                                  help_text="How long you can take a message back after pressing Send.")
    send_at = forms.DateTimeField(label="Send at", required=False,
                                  input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"],
                                  widget=forms.DateTimeInput(attrs={"type": "datetime-local"},
                                                             format="%Y-%m-%dT%H:%M"),
                                  help_text="The time is in UTC.")
    tz = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)

    def __init__(self, *args, suggestions_id: str = "compose-recipients", **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("to", "cc", "bcc"):
            self.fields[name].widget.attrs.update({"list": suggestions_id, "autocomplete": "off",
                                                   "data-suggest": "", "spellcheck": "false"})
        self.fields["to"].widget.attrs["placeholder"] = "name@example.com, another@example.com"
        self.fields["subject"].widget.attrs["data-shortcut-target"] = "subject"

    def clean_forward_folder(self):
        value = self.cleaned_data["forward_folder"]
        if value and header_problem(value):
            raise ValidationError("Not a folder.")
        return value

    def clean_tz(self):
        return self.cleaned_data["tz"] if _zone(self.cleaned_data["tz"]) else ""

    @property
    def rich(self) -> bool:
        return self.cleaned_data.get("format") == "rich"

    def composition(self) -> Composition:
        data = self.cleaned_data
        return Composition(to=data["to"].strip(), cc=data["cc"].strip(), bcc=data["bcc"].strip(),
                           subject=data["subject"].strip(), body_text=data["body"].replace("\r\n", "\n"),
                           body_html=data["body_html"] if self.rich else "",
                           in_reply_to=data["in_reply_to"].strip(), references=data["references"].strip())

    def forward(self) -> tuple[str, int] | None:
        data = self.cleaned_data
        return (data["forward_folder"], data["forward_uid"]) if data["forward_folder"] and data["forward_uid"] else None

    def scheduled_at(self):
        """The chosen time in the browser's time zone (sent by the page's script), else in UTC."""
        value = self.cleaned_data.get("send_at")
        if value is None:
            return None
        return value.replace(tzinfo=None).replace(tzinfo=_zone(self.cleaned_data.get("tz")) or UTC)


def _zone(name: str | None):
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _undo_preference(request) -> int:
    try:
        seconds = int(request.COOKIES.get(UNDO_COOKIE, UNDO_DEFAULT))
    except ValueError:
        return UNDO_DEFAULT
    return seconds if seconds in dict(UNDO_CHOICES) else UNDO_DEFAULT


def _identity(mailbox) -> str:
    return f"{mailbox.display_name} <{mailbox.address}>" if mailbox.display_name else mailbox.address


def _problem(exc: Exception) -> str:
    if isinstance(exc, QuotaExceeded):
        return (f"Your mailbox is full, so the draft could not be kept: {exc.detail}. "
                "Delete some mail (and empty the Trash), then try again.")
    if isinstance(exc, MailboxLocked):
        return f"This mailbox cannot send mail: {exc.detail} Ask your provider to restore it."
    return getattr(exc, "detail", None) or str(exc)


def _add_errors(form: ComposeForm, exc: InvalidFields) -> None:
    for key, problems in exc.message_dict.items():
        field = ERROR_FIELDS.get(key)
        for problem in problems:
            if key in ("body_html", "body_text"):
                problem = "Write a message before sending."
            elif field is None:
                problem = f"{key.replace('_', ' ')}: {problem}"
            form.add_error(field, problem[:1].upper() + problem[1:])


def _attachment_state(mailbox, form: ComposeForm) -> dict:
    """The attachments region as the posted form left it: the draft's (ticked as posted) or, before
    there is a draft, those of the message being forwarded."""
    data = getattr(form, "cleaned_data", {})
    state = {"draft_uid": data.get("draft"), "attachments": [], "kept": set(data.get("keep") or []),
             "forward_attachments": [], "forward_kept": set(data.get("forward_keep") or [])}
    try:
        if state["draft_uid"]:
            state["attachments"] = draft_open(mailbox=mailbox, uid=state["draft_uid"]).attachments
        elif form.is_bound and form.is_valid() and (source := form.forward()):
            state["forward_attachments"] = inbox_message(mailbox=mailbox, folder=source[0],
                                                         uid=source[1]).message.attachments
    except (StoreError, DomainError):
        state["draft_uid"] = None  # gone: the next save makes a new draft
    return state


def _page(request, mailbox, form: ComposeForm, *, state: dict | None = None, rich: bool = False, problem: str = "",
          heading: str = "New message", status: int = 200):
    state = state if state is not None else {"draft_uid": None, "attachments": [], "kept": set(),
                                             "forward_attachments": [], "forward_kept": set()}
    signature = html_to_text(mailbox.signature_html).strip() if mailbox.signature_html else ""
    form.fields["files"].help_text = f"Up to {mailbox.effective_plan.attachment_max_mb} MB in total per message."
    context = {
        "mailbox": mailbox, "form": form, "heading": heading, "problem": problem, "rich": rich,
        "identity": _identity(mailbox), "signature": signature,
        "attachment_max_mb": mailbox.effective_plan.attachment_max_mb,
        "suggestions": recipient_suggestions(mailbox=mailbox, query="", limit=SUGGESTIONS_SHOWN),
        **state,
    }
    return render(request, "webmail/compose.html", context, status=status)


def _initial(composition: Composition, request, **extra) -> dict:
    return {"to": composition.to, "cc": composition.cc, "bcc": composition.bcc, "subject": composition.subject,
            "body": composition.body_text, "body_html": composition.body_html, "format": "plain",
            "in_reply_to": composition.in_reply_to, "references": composition.references,
            "undo": _undo_preference(request), **extra}


# Pages -------------------------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
@owner_required
def compose(request, mailbox):
    """GET: a new message (?to=, ?cc=, ?subject= fill it in). POST: the form's Send, Send later,
    Save draft or Discard."""
    if request.method == "POST":
        return _submitted(request, mailbox)
    composition = Composition(to=request.GET.get("to", "")[:4000], cc=request.GET.get("cc", "")[:4000],
                              subject=request.GET.get("subject", "")[:998])
    return _page(request, mailbox, ComposeForm(initial=_initial(composition, request)), rich=True)


def _start(request, mailbox, name: str, uid: int, mode: str):
    try:
        started = reply_start(mailbox=mailbox, folder=name, uid=uid, mode=mode)
    except (MessageNotFound, FolderNotFound) as exc:
        raise Http404("No such message.") from exc
    except (StoreError, DomainError) as exc:  # the mail server is away: say so, keep the form
        return _page(request, mailbox, ComposeForm(initial=_initial(Composition(), request)), problem=_problem(exc),
                     status=503)
    extra = {}
    state = None
    if mode == FORWARD:
        extra = {"forward_folder": name, "forward_uid": uid,
                 "forward_keep": [attachment.index for attachment in started.attachments]}
        state = {"draft_uid": None, "attachments": [], "kept": set(), "forward_attachments": started.attachments,
                 "forward_kept": {attachment.index for attachment in started.attachments}}
    heading = {REPLY: "Reply", REPLY_ALL: "Reply to all", FORWARD: "Forward"}[mode]
    form = ComposeForm(initial=_initial(started.composition, request, **extra))
    return _page(request, mailbox, form, state=state, rich=started.rich, heading=heading)


@require_GET
@owner_required
def reply(request, mailbox, name: str, uid: int):
    return _start(request, mailbox, name, uid, REPLY)


@require_GET
@owner_required
def reply_all(request, mailbox, name: str, uid: int):
    return _start(request, mailbox, name, uid, REPLY_ALL)


@require_GET
@owner_required
def forward(request, mailbox, name: str, uid: int):
    return _start(request, mailbox, name, uid, FORWARD)


@require_GET
@owner_required
def draft(request, mailbox, uid: int):
    """A draft from the Drafts folder, to go on writing it."""
    try:
        found = draft_open(mailbox=mailbox, uid=uid)
    except (MessageNotFound, FolderNotFound) as exc:
        raise Http404("No such draft.") from exc
    except (StoreError, DomainError) as exc:
        return _page(request, mailbox, ComposeForm(initial=_initial(Composition(), request)), problem=_problem(exc),
                     status=503)
    indexes = [attachment.index for attachment in found.attachments]
    form = ComposeForm(initial=_initial(found.composition, request, draft=uid, keep=indexes))
    state = {"draft_uid": uid, "attachments": found.attachments, "kept": set(indexes), "forward_attachments": [],
             "forward_kept": set()}
    failure = send_failure_for_draft(mailbox=mailbox, draft_uid=uid)
    problem = (f"{failure_summary(failure)}. Correct it below and send it again." if failure is not None else "")
    return _page(request, mailbox, form, state=state, rich=found.composition.rich, heading="Draft", problem=problem)


def _uploads(form: ComposeForm) -> list:
    return [attachment_file(upload.name, upload.content_type, upload.read()) for upload in form.cleaned_data["files"]]


def _submitted(request, mailbox):
    form = ComposeForm(request.POST, request.FILES)
    action = request.POST.get("action", "send")
    if action not in {"send", "schedule", "save", "discard"}:
        action = "send"
    if not form.is_valid():
        return _page(request, mailbox, form, state=_attachment_state(mailbox, form), rich=form.rich, status=400)
    data = form.cleaned_data
    if action == "discard":
        if data["draft"]:
            try:
                draft_discard(mailbox=mailbox, uid=data["draft"])
            except (StoreError, DomainError) as exc:
                return _page(request, mailbox, form, state=_attachment_state(mailbox, form), rich=form.rich,
                             problem=_problem(exc), status=503)
        messages.success(request, "Draft discarded.")
        return redirect("webmail:inbox")
    uploads, problem, status = _uploads(form), "", 422
    try:
        attachments = attachments_gather(mailbox=mailbox, draft_uid=data["draft"], keep=data["keep"],
                                         forward=form.forward(), forward_keep=data["forward_keep"], uploads=uploads)
        if action == "save":
            saved = draft_save(mailbox=mailbox, composition=form.composition(), attachments=attachments,
                               replaces=data["draft"])
            messages.success(request, "Draft saved.")
            return redirect("webmail:compose_draft", saved.uid)
        scheduled_at = form.scheduled_at() if action == "schedule" else None
        if action == "schedule" and scheduled_at is None:
            raise InvalidFields({"scheduled_at": ["Pick the date and time to send it at."]})
        sent = draft_send(mailbox=mailbox, composition=form.composition(), attachments=attachments,
                          draft_uid=data["draft"], unsend_window=0 if scheduled_at else data["undo"],
                          scheduled_at=scheduled_at)
    except InvalidFields as exc:
        _add_errors(form, exc)
    except (StoreError, DomainError) as exc:  # quota, suspended mailbox, mail server away
        problem, status = _problem(exc), 429 if getattr(exc, "retry_after", None) else 422
    else:
        response = redirect("webmail:compose_sent", sent.pk)
        response.set_cookie(UNDO_COOKIE, str(data["undo"]), max_age=365 * 86400, httponly=True, samesite="Lax",
                            secure=settings.SESSION_COOKIE_SECURE, path="/")
        return response
    state = _keep_uploads(mailbox, form, uploads) if uploads and action != "save" else None
    if state is None:
        state = _attachment_state(mailbox, form)
    return _page(request, mailbox, form, state=state, rich=form.rich, problem=problem, status=status)


def _keep_uploads(mailbox, form: ComposeForm, uploads: list) -> dict | None:
    """A send that was refused must not lose the files just uploaded: keep them in the draft."""
    data = form.cleaned_data
    try:
        attachments = attachments_gather(mailbox=mailbox, draft_uid=data["draft"], keep=data["keep"],
                                         forward=form.forward(), forward_keep=data["forward_keep"], uploads=uploads)
        saved = draft_save(mailbox=mailbox, composition=form.composition(), attachments=attachments,
                           replaces=data["draft"])
    except (StoreError, DomainError):
        form.add_error("files", "The files you chose could not be kept; choose them again.")
        return None
    indexes = {attachment.index for attachment in saved.attachments}
    return {"draft_uid": saved.uid, "attachments": saved.attachments, "kept": indexes, "forward_attachments": [],
            "forward_kept": set()}


@require_POST
@owner_required
def autosave(request, mailbox):
    """The page's script saves the draft here every few seconds, on leaving and with each upload
    (XHR, with progress); the answer is the form's draft region (the draft's UID, its attachments)."""
    form = ComposeForm(request.POST, request.FILES)
    if not form.is_valid():
        return HttpResponse("The draft could not be saved: " + "; ".join(
            f"{error}" for errors in form.errors.values() for error in errors), status=400,
            content_type="text/plain; charset=utf-8")
    data = form.cleaned_data
    try:
        attachments = attachments_gather(mailbox=mailbox, draft_uid=data["draft"], keep=data["keep"],
                                         forward=form.forward(), forward_keep=data["forward_keep"],
                                         uploads=_uploads(form))
        saved = draft_save(mailbox=mailbox, composition=form.composition(), attachments=attachments,
                           replaces=data["draft"])
    except InvalidFields as exc:
        text = "; ".join(problem for problems in exc.message_dict.values() for problem in problems)
        return HttpResponse(f"The draft could not be saved: {text}", status=422,
                            content_type="text/plain; charset=utf-8")
    except (StoreError, DomainError) as exc:
        return HttpResponse(_problem(exc), status=507 if isinstance(exc, QuotaExceeded) else 503,
                            content_type="text/plain; charset=utf-8")
    indexes = {attachment.index for attachment in saved.attachments}
    return render(request, "webmail/compose.html#draft-state", {
        "draft_uid": saved.uid, "attachments": saved.attachments, "kept": indexes, "forward_attachments": [],
        "forward_kept": set(), "saved_at": timezone.now()})


@require_GET
@owner_required
def sent(request, mailbox, scheduled_id: int):
    """After Send: "Sending in N s — Undo" while the undo window lasts, "Scheduled for …" for a
    send-later, then what became of it."""
    try:
        message = sent_message_get(mailbox=mailbox, scheduled_id=scheduled_id)
    except OutboundMessage.DoesNotExist:
        raise Http404("No such message.") from None
    Status = OutboundMessage.Status
    held = message.status == Status.SCHEDULED
    failure = getattr(message, "failure", None) if message.status in (Status.SENT, Status.FAILED) else None
    remaining = max(0, int((message.due_at - timezone.now()).total_seconds())) if held else 0
    return render(request, "webmail/compose_sent.html", {
        "mailbox": mailbox, "message": message, "payload": message.payload, "held": held,
        "later": held and message.scheduled_at is not None, "remaining": remaining,
        "recipients": len(message.payload.get("to", [])) + len(message.payload.get("cc", []))
        + len(message.payload.get("bcc", [])),
        "Status": Status,
        "failure": failure,
    })


@require_POST
@owner_required
def failure_dismiss(request, mailbox, failure_id: int):
    """Close the notice of a failed send (its draft and its bounce stay)."""
    if not send_failure_dismiss(mailbox=mailbox, failure_id=failure_id):
        raise Http404("No such notice.")
    return redirect(request.POST.get("next") if url_has_allowed_host_and_scheme(
        request.POST.get("next"), allowed_hosts={request.get_host()}) else "webmail:inbox")


@require_POST
@owner_required
def undo(request, mailbox, scheduled_id: int):
    """Take a held send back (undo window or send-later) and bring its draft back."""
    try:
        undone = send_undo(mailbox=mailbox, scheduled_id=scheduled_id)
    except OutboundMessage.DoesNotExist:
        try:
            sent_message_get(mailbox=mailbox, scheduled_id=scheduled_id)
        except OutboundMessage.DoesNotExist:
            raise Http404("No such message.") from None
        messages.error(request, "Too late to undo: the message is already on its way.")
        return redirect("webmail:compose_sent", scheduled_id)
    if undone.draft_uid is not None:
        messages.success(request, "Sending cancelled. Your message is back in Drafts.")
        return redirect("webmail:compose_draft", undone.draft_uid)
    form = ComposeForm(initial=_initial(undone.composition, request))
    problem = (f"Sending cancelled, but the draft could not be kept ({undone.problem}). Your message is below; "
               "attach any files again.")
    return _page(request, mailbox, form, rich=undone.composition.rich, problem=problem, heading="Draft")


@require_GET
@owner_required
def suggest(request, mailbox):
    """Address suggestions for the last entry of a To, Cc or Bcc field (?q= its whole value): the
    options of its <datalist>, each the field's value with that entry completed."""
    value = request.GET.get("q", "")[:4000]
    head, comma, last = value.rpartition(",")
    prefix = f"{head.strip()}, " if comma and head.strip() else ""
    found = recipient_suggestions(mailbox=mailbox, query=last.strip(), limit=8) if last.strip() else []
    return render(request, "webmail/compose.html#suggestions",
                  {"suggestions": [f"{prefix}{entry}, " for entry in found]})
