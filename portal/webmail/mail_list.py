"""The mail list for mailbox owners: a folder's messages paged and sorted by the IMAP server, search
(from, to, subject, body, dates, attachment, unread, starred, label) done by the server, one action
on many messages (or on every message matching the search), the owner's folders and labels, and a
conversation's messages wherever they are filed.

Everything goes through mailcore.inbox.services, the service REST and MCP use. Each page works as a
plain form without JavaScript; with htmx, the list region is swapped and an aria-live line says what
happened."""
from html import escape
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, QueryDict
from django.shortcuts import redirect, render
from django.template.defaultfilters import date as date_filter
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.timezone import template_localtime
from django.views.decorators.http import require_http_methods, require_POST

from mailcore.errors import DomainError, InvalidFields
from mailcore.inbox.labels import HEX_COLOR, label_create, label_delete
from mailcore.inbox.services import (
    folder_create,
    folder_delete,
    folder_rename,
    inbox_conversation,
    inbox_list,
    inbox_uids,
    messages_update_many,
)
from mailcore.mailboxes.models import Label
from mailcore.mailboxes.selectors import own_label_get
from mailcore.paging import MAX_PAGE
from mailcore.store.base import SORT_KEYS, Criteria, StoreError, StoreUnavailable
from mailcore.rules.filters import filters_folder_renamed
from protection.learning import learning_outcome, messages_mark_not_spam, messages_mark_spam
from webmail.reading import message_open
from portal.templatetags.webmail_tags import sender_name
from portal.webmail.access import owner_required
from portal.webmail.frame import webmail_frame
from portal.webmail.reading import FRAME_SANDBOX, page_policy
from protection.authentication import message_authentication

PER_PAGE = 50
SORT_CHOICES = [("arrival", "Received"), ("date", "Date sent"), ("from", "Sender"), ("subject", "Subject"),
                ("size", "Size")]
assert {key for key, _ in SORT_CHOICES} == set(SORT_KEYS)
# What a "select all matching" action may touch at most in one go (a mailbox of 100k messages
# would otherwise hold one request for minutes); the page says when there were more.
BULK_LIMIT = 5000


class SearchForm(forms.Form):
    """The list's query: search fields, sort and page. Every field is optional."""

    q = forms.CharField(label="Search", required=False, max_length=200)
    from_ = forms.CharField(label="From", required=False, max_length=200)
    to = forms.CharField(label="To or Cc", required=False, max_length=200)
    subject = forms.CharField(label="Subject", required=False, max_length=200)
    body = forms.CharField(label="Body", required=False, max_length=200)
    since = forms.DateField(label="Received on or after", required=False, widget=forms.DateInput(attrs={"type": "date"}))
    before = forms.DateField(label="Received on or before", required=False,
                             widget=forms.DateInput(attrs={"type": "date"}))
    attachment = forms.BooleanField(label="Has attachment", required=False)
    unread = forms.BooleanField(label="Unread", required=False)
    starred = forms.BooleanField(label="Starred", required=False)
    label = forms.TypedChoiceField(label="Label", required=False, coerce=int, empty_value=None)
    sort = forms.ChoiceField(label="Sort by", choices=SORT_CHOICES, required=False)
    order = forms.ChoiceField(label="Order", choices=[("desc", "Newest or largest first"),
                                                      ("asc", "Oldest or smallest first")], required=False)
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)

    def __init__(self, data, *, labels, **kwargs):
        super().__init__(data, **kwargs)
        self.fields["label"].choices = [("", "Any label")] + [(label.pk, label.name) for label in labels]

    def add_prefix(self, field_name):
        return "from" if field_name == "from_" else super().add_prefix(field_name)

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("before") and data["since"] > data["before"]:
            self.add_error("before", "The end date is before the start date.")
        for name in ("q", "from_", "to", "subject", "body"):
            if any(ord(char) < 32 for char in data.get(name) or ""):
                self.add_error(name, "Search words cannot contain control characters.")
        return data

    def criteria(self) -> Criteria:
        data = self.cleaned_data
        before = data.get("before")
        keyword = f"$label{data['label']}" if data.get("label") else None
        return Criteria(text=data.get("q") or "", from_=data.get("from_") or "", to=data.get("to") or "",
                        subject=data.get("subject") or "", body=data.get("body") or "", since=data.get("since"),
                        before=before and before.fromordinal(before.toordinal() + 1),
                        has_attachment=bool(data.get("attachment")), unseen=bool(data.get("unread")),
                        starred=bool(data.get("starred")), keyword=keyword)

    def query(self, *, page: int | None = None) -> str:
        """The query string that reopens this list (search and sort), without the page unless given."""
        data = getattr(self, "cleaned_data", {})
        pairs = []
        for name in ("q", "from_", "to", "subject", "body", "since", "before", "label", "sort", "order"):
            value = data.get(name)
            if value not in (None, ""):
                pairs.append(("from" if name == "from_" else name, value))
        pairs += [(name, "1") for name in ("attachment", "unread", "starred") if data.get(name)]
        if page and page > 1:
            pairs.append(("page", page))
        return urlencode(pairs)


def _store_problem(exc: DomainError) -> str:
    return getattr(exc, "detail", None) or str(exc)


def _frame(request, folder: str) -> dict:
    """The page's share of the frame: the open folder, the folders and labels (read once per request)."""
    frame = webmail_frame(request)
    return {"mailbox": frame.mailbox, "folders": frame.folders, "folder": folder, "labels": frame.labels}


def _message_link(folder: str, special_use: str | None):
    """A row's link (a draft opens in compose), reversed once per page: the UID ends the path."""
    if special_use == "\\Drafts":
        prefix = reverse("webmail:compose_draft", args=[0])[:-2]
    else:
        prefix = reverse("webmail:message", args=[folder, 0])[:-2]
    return lambda uid: f"{prefix}{uid}/"


def _date_text(when, months: dict) -> str:
    """The date filter's "j M Y, H:i" with the month's name looked up (translated) once per page."""
    if when.month not in months:
        months[when.month] = date_filter(when, "M")
    return f"{when.day} {months[when.month]} {when.year:04d}, {when.hour:02d}:{when.minute:02d}"


# One row of the list, built here rather than by the template per row (50 rows through the engine
# were a third of the page). Every value from the message, the labels or a URL goes through
# html.escape, which is what the template engine's autoescape (django.utils.html.escape) applies;
# format_html would too, at five times the cost per value.
_ROW = (
    '\n          <tr class="mail-row{classes}" data-message-row data-uid="{uid}">\n'
    '            <td class="mail-row__select"><input type="checkbox" name="uids" value="{uid}" id="select-{uid}" '
    'aria-label="Select message {subject}"></td>\n'
    '            <td class="mail-row__star">{star}</td>\n'
    '            <td class="mail-row__who"><span title="{who}">{who_name}</span></td>\n'
    '            <td class="mail-row__subject">\n'
    '              <a href="{link}" data-open>{subject}</a>{unread}\n'
    '              {clip}\n'
    '              {labels}\n'
    '            </td>\n'
    '            <td class="mail-row__date nowrap">{date}</td>\n'
    '          </tr>\n        '
)
_STAR = ('<span class="mail-star" title="Starred"><span class="mail-icon" aria-hidden="true">{}</span>'
         '<span class="visually-hidden">Starred</span></span>')
_CLIP = ('<span class="mail-clip" title="Has attachments"><span class="mail-icon" aria-hidden="true">{}</span>'
         '<span class="visually-hidden">(has attachments)</span></span>')
_UNREAD = '<span class="visually-hidden"> (unread)</span>'


def _row(message, labels, link, icons: dict, months: dict, *, show_recipient: bool) -> str:
    """One row's HTML: our markup and icons as they are, every other value escaped."""
    who = message.to if show_recipient else message.from_
    when = template_localtime(message.date) if message.date else None
    return _ROW.format(
        uid=int(message.uid),
        classes=("" if message.seen else " mail-row--unread") + (" mail-row--starred" if message.starred else ""),
        subject=escape(message.subject or "(no subject)"), link=escape(link(message.uid)), who=escape(who),
        who_name=escape(sender_name(who) or ("(no recipient)" if show_recipient else "(unknown sender)")),
        star=_STAR.format(icons["star"]) if message.starred else "", unread="" if message.seen else _UNREAD,
        clip=_CLIP.format(icons["paperclip"]) if message.has_attachments else "",
        labels="".join(f'<span class="mail-label" style="--label-color: {escape(label.color)}">'
                       f"{escape(label.name)}</span>" for label in labels),
        # date:"c" is isoformat
        date=f'<time datetime="{when.isoformat()}">{escape(_date_text(when, months))}</time>' if when else "",
    )


def _rows_html(listing, labels, link, *, show_recipient: bool) -> str:
    """The list's rows as HTML (see _ROW)."""
    months, icons = {}, _icons()
    rows = "".join(_row(item.summary, [label for label in labels if label.pk in item.labels], link, icons, months,
                        show_recipient=show_recipient) for item in listing.messages)
    return mark_safe(rows)  # noqa: S308 - every value in it escaped by _row


def _icons() -> dict:
    """The row icons, drawn once per page instead of included per row."""
    return {name: render_to_string("components/icon.html", {"name": name}) for name in ("star", "paperclip")}


def _listing_context(request, mailbox, name: str) -> tuple[dict, int]:
    """The page of a folder. The sidebar's folders are read on a second mail server connection while
    this one lists the page; the page is a 404 once they show the folder does not exist."""
    webmail_frame(request).start_folders()
    labels = webmail_frame(request).labels
    form = SearchForm(request.GET or None, labels=labels)
    valid = not request.GET or form.is_valid()
    data = getattr(form, "cleaned_data", {})
    criteria = form.criteria() if data else Criteria()
    sort, reverse = data.get("sort") or "arrival", data.get("order") != "asc"
    page = data.get("page") or 1
    listing = problem = None
    if valid:
        try:
            listing = inbox_list(mailbox=mailbox, folder=name, page=page, per_page=PER_PAGE, criteria=criteria,
                                 sort=sort, reverse=reverse, labels=labels)
        except StoreError as exc:
            problem = exc
    frame = _frame(request, name)
    if frame["folders"] and name not in {found.name for found in frame["folders"]}:
        raise Http404(f"No folder {name}.")
    context = {**frame, "form": form, "listing": None, "searching": False, "bulk_limit": BULK_LIMIT,
               "special_use": next((f.special_use for f in frame["folders"] if f.name == name), None)}
    if not valid:
        return context, 400
    if problem is not None:
        context["problem"] = _store_problem(problem)
        return context, 503 if isinstance(problem, StoreUnavailable) else 400
    pages = max(1, -(-listing.total // PER_PAGE))
    show_recipient = context["special_use"] in {"\\Sent", "\\Drafts"}
    context.update({
        "listing": listing, "searching": not criteria.is_empty, "query": form.query(), "sort": sort,
        "reverse": reverse, "pages": pages,
        "previous_query": form.query(page=page - 1) if page > 1 else None,
        "next_query": form.query(page=page + 1) if page < pages else None,
        "show_recipient": show_recipient,
        "rows_html": _rows_html(listing, labels, _message_link(name, context["special_use"]),
                                show_recipient=show_recipient) if listing.messages else "",
    })
    return context, 200


@require_http_methods(["GET"])
@owner_required
def folder(request, mailbox, name: str = "INBOX"):
    context, status = _listing_context(request, mailbox, name)
    template = "webmail/folder.html#mail-list" if request.htmx and not request.htmx.boosted else "webmail/folder.html"
    return render(request, template, context, status=status)


class UidsField(forms.Field):
    """The selected messages' UIDs (checkboxes named `uids`); the store skips any that are gone."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        try:
            uids = [int(item) for item in value or []]
        except (TypeError, ValueError):
            raise ValidationError("Message numbers are whole numbers.") from None
        if any(uid < 1 for uid in uids):
            raise ValidationError("Message numbers are positive.")
        return uids


class BulkForm(forms.Form):
    ACTIONS = [("read", "Mark as read"), ("unread", "Mark as unread"), ("star", "Star"), ("unstar", "Remove star"),
               ("move", "Move to"), ("delete", "Delete"), ("label", "Add label"), ("unlabel", "Remove label"),
               ("spam", "Spam"), ("not_spam", "Not spam")]
    action = forms.ChoiceField(choices=ACTIONS)
    uids = UidsField(required=False)
    all_matching = forms.BooleanField(required=False)
    target = forms.CharField(required=False, max_length=255)
    label = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    query = forms.CharField(required=False, max_length=4000)

    def __init__(self, data, *, labels, folders, **kwargs):
        super().__init__(data, **kwargs)
        self.fields["label"].choices = [("", "")] + [(label.pk, label.name) for label in labels]
        self.folders = folders

    def clean(self):
        data = super().clean()
        action = data.get("action")
        if action == "move" and data.get("target") not in self.folders:
            self.add_error("target", "Choose the folder to move to.")
        if action in {"label", "unlabel"} and not data.get("label"):
            self.add_error("label", "Choose a label.")
        if not data.get("uids") and not data.get("all_matching"):
            raise ValidationError("Nothing was changed: select at least one message first (tick the box beside "
                                  "it).")
        return data


DONE = {"read": "marked as read", "unread": "marked as unread", "star": "starred", "unstar": "unstarred",
        "move": "moved to {target}", "delete": "deleted", "label": "labelled {label}", "unlabel": "unlabelled {label}"}


@require_POST
@owner_required
def bulk(request, mailbox, name: str):
    """One action on the selected messages, or on every message matching the search (`all_matching`
    with the list's query): mark, star, move, delete, label, spam and not spam."""
    frame = _frame(request, name)
    folders = {found.name for found in frame["folders"]}
    if name not in folders:
        raise Http404(f"No folder {name}.")
    form = BulkForm(request.POST, labels=frame["labels"], folders=folders)
    back = f"{reverse('webmail:folder', args=[name])}?{request.POST.get('query', '')}".rstrip("?")
    if not form.is_valid():
        problem = " ".join(error for errors in form.errors.values() for error in errors)
        return _bulk_answer(request, mailbox, name, back, problem, ok=False)
    data = form.cleaned_data
    uids = data["uids"]
    more = False
    if data["all_matching"]:
        search = SearchForm(QueryDict(data["query"]), labels=frame["labels"])
        if not search.is_valid():
            return _bulk_answer(request, mailbox, name, back, "The search could not be read again.", ok=False)
        uids = inbox_uids(mailbox=mailbox, folder=name, criteria=search.criteria())
        more, uids = len(uids) > BULK_LIMIT, uids[:BULK_LIMIT]
    action = data["action"]
    label = next((item for item in frame["labels"] if item.pk == data.get("label")), None)
    if action in {"spam", "not_spam"}:
        return _bulk_learn(request, mailbox, name, back, uids, spam=action == "spam", more=more)
    try:
        count = messages_update_many(
            mailbox=mailbox, folder=name, uids=uids,
            seen={"read": True, "unread": False}.get(action), starred={"star": True, "unstar": False}.get(action),
            add_labels=[label.pk] if action == "label" else [], remove_labels=[label.pk] if action == "unlabel" else [],
            move_to=data["target"] if action == "move" else None, delete=action == "delete")
    except (StoreError, DomainError) as exc:
        return _bulk_answer(request, mailbox, name, back, f"Nothing was changed: {_store_problem(exc)}", ok=False)
    what = DONE[action].format(target=data.get("target"), label=label.name if label else "")
    text = f"{count} message{'s' if count != 1 else ''} {what}."
    if more:
        text += f" Only the first {BULK_LIMIT} were changed; run it again for the rest."
    return _bulk_answer(request, mailbox, name, back, text, ok=True)


def _bulk_learn(request, mailbox, name: str, back: str, uids: list[int], *, spam: bool, more: bool):
    """Spam or Not spam on many messages: learned for this mailbox and moved (Junk, the Inbox) at once."""
    mark = messages_mark_spam if spam else messages_mark_not_spam
    try:
        learned = mark(mailbox=mailbox, folder=name, uids=uids)
    except (StoreError, DomainError) as exc:
        return _bulk_answer(request, mailbox, name, back, f"Nothing was changed: {_store_problem(exc)}", ok=False)
    text = learning_outcome(learned, spam=spam)
    if more:
        text += f" Only the first {BULK_LIMIT} were changed; run it again for the rest."
    return _bulk_answer(request, mailbox, name, back, text, ok=True)


def _bulk_answer(request, mailbox, name: str, back: str, text: str, *, ok: bool):
    """Without JavaScript: back to the list with the outcome as a message. With htmx: the list
    region again, with the outcome in its aria-live status line (and a refusal as an alert above the
    list). A refusal is a 200 there: htmx swaps no 4xx answer, so a 422 would show nothing."""
    if request.htmx:
        request.GET = QueryDict(request.POST.get("query", ""))
        context, status = _listing_context(request, mailbox, name)
        context["outcome"], context["outcome_ok"] = text, ok
        return render(request, "webmail/folder.html#mail-list", context)
    (messages.success if ok else messages.error)(request, text)
    return redirect(back)


class FolderForm(forms.Form):
    name = forms.CharField(label="Folder name", max_length=200,
                           help_text='Use "/" for a folder inside another, e.g. Projects/2026.')


@require_http_methods(["GET", "POST"])
@owner_required
def folders(request, mailbox):
    """The owner's folders: create, rename, delete (the default folders stay)."""
    frame = _frame(request, "")
    problem = None
    status = 200
    create_form = FolderForm(prefix="create")
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create":
                create_form = FolderForm(request.POST, prefix="create")
                if create_form.is_valid():
                    folder_create(mailbox=mailbox, name=create_form.cleaned_data["name"])
                    messages.success(request, f"Folder {create_form.cleaned_data['name'].strip()} created.")
                    return redirect("webmail:folders")
            elif action == "rename":
                old, new = request.POST.get("name", ""), request.POST.get("new_name", "").strip()
                folder_rename(mailbox=mailbox, name=old, new_name=new)
                filters_folder_renamed(mailbox=mailbox, old=old, new=new)
                messages.success(request, f"Folder renamed to {request.POST.get('new_name', '').strip()}.")
                return redirect("webmail:folders")
            elif action == "delete":
                if request.POST.get("confirm") != "yes":
                    return render(request, "webmail/folder_delete.html", {**frame, "target": request.POST.get("name")})
                folder_delete(mailbox=mailbox, name=request.POST.get("name", ""))
                messages.success(request, f"Folder {request.POST.get('name')} deleted.")
                return redirect("webmail:folders")
            else:
                problem = "Unknown action."
        except (StoreError, DomainError) as exc:
            problem = _store_problem(exc)
        status = 422
    return render(request, "webmail/folders.html", {**frame, "create_form": create_form, "problem": problem},
                  status=status)


class LabelForm(forms.Form):
    name = forms.CharField(label="Label name", max_length=64)
    color = forms.CharField(label="Colour", max_length=7, initial="#1a73e8",
                            widget=forms.TextInput(attrs={"type": "color"}))

    def clean_color(self):
        color = self.cleaned_data["color"]
        if not HEX_COLOR.match(color):
            raise ValidationError("Give a colour such as #1a73e8.")
        return color


@require_http_methods(["GET", "POST"])
@owner_required
def labels(request, mailbox):
    """The mailbox's own labels (and, on an account's own mailboxes, the account's from the label API)."""
    form = LabelForm(prefix="label")
    status = 200
    if request.method == "POST":
        if request.POST.get("action") == "delete":
            try:
                label = own_label_get(mailbox=mailbox, label_id=int(request.POST.get("label", "")))
            except (ValueError, Label.DoesNotExist):
                raise Http404("No such label.") from None
            label_delete(label=label)
            messages.success(request, f"Label {label.name} deleted.")
            return redirect("webmail:labels")
        form = LabelForm(request.POST, prefix="label")
        if form.is_valid():
            try:
                label_create(account=mailbox.account, mailbox=mailbox, name=form.cleaned_data["name"],
                             color=form.cleaned_data["color"])
            except InvalidFields as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                messages.success(request, f"Label {form.cleaned_data['name'].strip()} created.")
                return redirect("webmail:labels")
        status = 422
    return render(request, "webmail/labels.html", {**_frame(request, ""), "form": form}, status=status)


@require_http_methods(["GET"])
@owner_required
def conversation(request, mailbox, name: str, uid: int):
    """A message with the rest of its conversation (replies joined through Message-ID and
    References, our own replies from Sent included), oldest first; the opened one is expanded."""
    try:
        members = inbox_conversation(mailbox=mailbox, folder=name, uid=uid)
    except (StoreError, DomainError) as exc:
        raise Http404("No such message.") from exc
    shown = []
    for member in members:
        opened = member.folder == name and member.summary.uid == uid
        body = None
        if opened or member is members[-1]:
            try:
                body = message_open(mailbox=mailbox, folder=member.folder, uid=member.summary.uid)
            except DomainError:
                body = None
        authentication = message_authentication(body.found.message.headers) if body else None
        shown.append({"member": member, "opened": opened, "body": body, "authentication": authentication})
    subject = next((item["member"].summary.subject for item in shown if item["opened"]), "")
    response = render(request, "webmail/conversation.html", {**_frame(request, name), "shown": shown,
                                                             "subject": subject, "frame_sandbox": FRAME_SANDBOX})
    response._csp_config = page_policy(remote_images=any(item["body"] and item["body"].remote_images_shown
                                                         for item in shown))
    return response
