"""A mailbox owner's filters and vacation reply: reads, checked writes, and publishing the Sieve script.

Every write validates everything at once (InvalidFields naming each bad field), changes the
rows and publishes the mailbox's script in one transaction, so Dovecot's next delivery runs what
the settings page shows. Publishing is a row (SieveScript) Dovecot reads through its SQL dict: no
file is shared between the app and Dovecot.
"""
import hashlib
from dataclasses import dataclass
from datetime import date, timedelta

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from mailcore.errors import InvalidFields
from mailcore.inbox.services import inbox_folders
from mailcore.mailboxes.models import Alias, Mailbox
from mailcore.mailboxes.selectors import labels_for_mailbox
from mailcore.rules.models import MailFilter, SieveScript, VacationAnswer, VacationReply
from mailcore.rules.sieve import render

MAX_FILTERS = 100
VALUE_MAX = 200
SUBJECT_MAX = 200
BODY_MAX = 10_000
DAYS_MIN, DAYS_MAX = 1, 60  # Pigeonhole's sieve_vacation_min_period / max_period (docker/dovecot/mailwell.conf)


def _control_characters(text: str, *, allow_line_breaks: bool = False) -> bool:
    allowed = {"\t", "\r", "\n"} if allow_line_breaks else {"\t"}
    return any((ord(char) < 32 or ord(char) == 127) and char not in allowed for char in text)


# reads


def mail_filter_list(*, mailbox: Mailbox) -> QuerySet[MailFilter]:
    return MailFilter.objects.filter(mailbox=mailbox).select_related("label").order_by("position", "id")


def mail_filter_get(*, mailbox: Mailbox, filter_id: int) -> MailFilter:
    """The mailbox's filter; another mailbox's is MailFilter.DoesNotExist."""
    return mail_filter_list(mailbox=mailbox).get(pk=filter_id)


def vacation_get(*, mailbox: Mailbox) -> VacationReply:
    """The mailbox's vacation reply, or an unsaved one that is off."""
    return VacationReply.objects.filter(mailbox=mailbox).first() or VacationReply(mailbox=mailbox)


def mailbox_addresses(*, mailbox: Mailbox) -> list[str]:
    """The addresses a vacation reply answers for: the mailbox's own, then its aliases."""
    aliases = Alias.objects.filter(mailbox=mailbox).order_by("address").values_list("address", flat=True)
    return [mailbox.address.lower(), *(alias.lower() for alias in aliases)]


# filters


@dataclass(frozen=True)
class FilterInput:
    field: str
    match: str
    value: str
    action: str
    folder: str = ""
    label_id: int | None = None
    stop: bool = True
    enabled: bool = True


def _clean_filter(mailbox: Mailbox, data: FilterInput) -> dict:
    """The row's values, or InvalidFields naming every bad field."""
    errors: dict[str, list[str]] = {}
    value = (data.value or "").strip()
    if data.field not in MailFilter.Field.values:
        errors["field"] = ["choose From, To or Cc, or Subject"]
    if data.match not in MailFilter.Match.values:
        errors["match"] = ["choose contains or is"]
    if not value:
        errors["value"] = ["enter the text to look for"]
    elif len(value) > VALUE_MAX:
        errors["value"] = [f"at most {VALUE_MAX} characters"]
    elif _control_characters(value):
        errors["value"] = ["one line, without control characters"]
    elif data.match == MailFilter.Match.IS and data.field in (MailFilter.Field.FROM, MailFilter.Field.TO):
        try:
            validate_email(value)
        except ValidationError:
            errors["value"] = ["\"is\" compares whole addresses: enter one (like ann@example.com), or choose contains"]
    folder, label = "", None
    if data.action not in MailFilter.Action.values:
        errors["action"] = ["choose what to do with matching mail"]
    elif data.action == MailFilter.Action.MOVE:
        folder = (data.folder or "").strip()
        if not folder:
            errors["folder"] = ["choose the folder to move matching mail to"]
        elif folder.upper() == "INBOX":
            errors["folder"] = ["mail arrives in the Inbox anyway: choose another folder"]
        elif folder not in {existing.name for existing in inbox_folders(mailbox=mailbox)}:
            errors["folder"] = [f"there is no folder named {folder}"]
    elif data.action == MailFilter.Action.LABEL:
        label = labels_for_mailbox(mailbox=mailbox).filter(pk=data.label_id).first() if data.label_id else None
        if label is None:
            errors["label"] = ["choose one of your labels"]
    if errors:
        raise InvalidFields(errors)
    return {"field": data.field, "match": data.match, "value": value, "action": data.action, "folder": folder,
            "label": label, "stop": bool(data.stop), "enabled": bool(data.enabled)}


def mail_filter_create(*, mailbox: Mailbox, data: FilterInput) -> MailFilter:
    """A filter after the others (it runs last)."""
    values = _clean_filter(mailbox, data)
    with transaction.atomic():
        existing = list(MailFilter.objects.select_for_update().filter(mailbox=mailbox)
                        .values_list("position", flat=True))
        if len(existing) >= MAX_FILTERS:
            raise InvalidFields({"value": [f"a mailbox has at most {MAX_FILTERS} filters; delete one first"]})
        mail_filter = MailFilter.objects.create(mailbox=mailbox, position=max(existing, default=-1) + 1, **values)
        sieve_publish(mailbox=mailbox)
    return mail_filter


def mail_filter_update(*, mail_filter: MailFilter, data: FilterInput) -> MailFilter:
    values = _clean_filter(mail_filter.mailbox, data)
    with transaction.atomic():
        for name, value in values.items():
            setattr(mail_filter, name, value)
        mail_filter.save()
        sieve_publish(mailbox=mail_filter.mailbox)
    return mail_filter


def mail_filter_delete(*, mail_filter: MailFilter) -> None:
    with transaction.atomic():
        mail_filter.delete()
        sieve_publish(mailbox=mail_filter.mailbox)


def mail_filters_reorder(*, mailbox: Mailbox, filter_ids: list[int]) -> None:
    """Put the mailbox's filters in this order; it must name each of them exactly once."""
    with transaction.atomic():
        filters = {f.pk: f for f in MailFilter.objects.select_for_update().filter(mailbox=mailbox)}
        if sorted(filter_ids) != sorted(filters):
            raise InvalidFields({"order": ["name each of this mailbox's filters once"]})
        for position, filter_id in enumerate(filter_ids):
            if filters[filter_id].position != position:
                MailFilter.objects.filter(pk=filter_id).update(position=position)
        sieve_publish(mailbox=mailbox)


def mail_filter_move(*, mail_filter: MailFilter, offset: int) -> None:
    """One place earlier (-1) or later (+1); at either end nothing changes."""
    order = list(mail_filter_list(mailbox=mail_filter.mailbox).values_list("pk", flat=True))
    index = order.index(mail_filter.pk)
    target = index + (1 if offset > 0 else -1)
    if 0 <= target < len(order):
        order[index], order[target] = order[target], order[index]
    mail_filters_reorder(mailbox=mail_filter.mailbox, filter_ids=order)


# vacation


@dataclass(frozen=True)
class VacationInput:
    enabled: bool
    subject: str = ""
    body: str = ""
    starts_on: date | None = None
    ends_on: date | None = None
    days: int = 7


def _clean_vacation(data: VacationInput) -> dict:
    errors: dict[str, list[str]] = {}
    subject, body = (data.subject or "").strip(), (data.body or "").strip()
    if len(subject) > SUBJECT_MAX:
        errors["subject"] = [f"at most {SUBJECT_MAX} characters"]
    elif _control_characters(subject):
        errors["subject"] = ["one line, without control characters"]
    if len(body) > BODY_MAX:
        errors["body"] = [f"at most {BODY_MAX} characters"]
    elif _control_characters(body, allow_line_breaks=True):
        errors["body"] = ["plain text without control characters"]
    elif data.enabled and not body:
        errors["body"] = ["write the reply senders get"]
    if not isinstance(data.days, int) or not DAYS_MIN <= data.days <= DAYS_MAX:
        errors["days"] = [f"a whole number of days from {DAYS_MIN} to {DAYS_MAX}"]
    if data.starts_on and data.ends_on and data.ends_on < data.starts_on:
        errors["ends_on"] = ["the last day comes before the first"]
    if errors:
        raise InvalidFields(errors)
    return {"enabled": bool(data.enabled), "subject": subject, "body": body, "starts_on": data.starts_on,
            "ends_on": data.ends_on, "days": data.days}


def vacation_set(*, mailbox: Mailbox, data: VacationInput) -> VacationReply:
    values = _clean_vacation(data)
    with transaction.atomic():
        vacation, _ = VacationReply.objects.update_or_create(mailbox=mailbox, defaults=values)
        sieve_publish(mailbox=mailbox)
    return vacation


# publishing


def sieve_render(*, mailbox: Mailbox) -> str:
    vacation = VacationReply.objects.filter(mailbox=mailbox, enabled=True).first()
    return render(filters=list(mail_filter_list(mailbox=mailbox)), vacation=vacation,
                  addresses=mailbox_addresses(mailbox=mailbox))


def sieve_publish(*, mailbox: Mailbox) -> SieveScript | None:
    """Render the mailbox's rows and store the script where Dovecot reads it (or remove it when
    there is nothing to run). Call after anything the script names changes: filters, the vacation
    reply, the mailbox's aliases."""
    script = sieve_render(mailbox=mailbox)
    if not script:
        SieveScript.objects.filter(mailbox=mailbox).delete()
        return None
    data_id = hashlib.sha256(script.encode()).hexdigest()[:40]
    published, _ = SieveScript.objects.update_or_create(mailbox=mailbox,
                                                         defaults={"script": script, "data_id": data_id})
    return published



def vacation_answers_purge() -> int:
    """Forget answers older than the longest `days` an owner can choose: they can no longer hold a
    reply back (a sweep job). Returns how many rows went."""
    cutoff = timezone.now() - timedelta(days=DAYS_MAX)
    deleted, _ = VacationAnswer.objects.filter(answered_at__lt=cutoff).delete()
    return deleted


def filters_folder_renamed(*, mailbox: Mailbox, old: str, new: str) -> int:
    """Filters that move mail into a renamed folder (or a folder inside it) follow it; the script is
    published again. Returns how many filters changed."""
    with transaction.atomic():
        moved = 0
        for mail_filter in MailFilter.objects.select_for_update().filter(mailbox=mailbox, action=MailFilter.Action.MOVE):
            if mail_filter.folder == old or mail_filter.folder.startswith(f"{old}/"):
                mail_filter.folder = new + mail_filter.folder[len(old):]
                mail_filter.save(update_fields=["folder"])
                moved += 1
        if moved:
            sieve_publish(mailbox=mailbox)
    return moved
