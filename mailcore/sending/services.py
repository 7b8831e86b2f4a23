"""Accepting a send (whoever asks: REST, MCP, webmail compose, campaigns): check a SendRequest,
reserve quota on the day it goes out, store a durable row; and the scheduled list. Dispatching the
rows is mailcore.sending.dispatch."""
import base64
import binascii
import logging
from contextlib import nullcontext
from datetime import timedelta
from functools import cache

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.validators import validate_email
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.accounts.models import Account, Plan, User
from mailcore.domains.names import InvalidHostname, address_to_ascii
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import send_route
from mailcore.sending.compose import header_problem, message_ids_problem, mime_type_problem
from mailcore.sending.inputs import AttachmentRequest, SendRequest
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.quota import quota_release, quota_reserve
from mailcore.sending.rendering import render
from mailcore.sending.mail_templates import template_get
from mailcore.jobs import DISPATCH_DUE_MAIL, enqueue
from mailcore.rawrows import Columns, instances, table
from mailcore.throttle import action_count

log = logging.getLogger(__name__)

MAX_RECIPIENTS = 50
MAX_UNSEND_WINDOW = 30
CALENDAR_METHODS = ("REQUEST", "CANCEL", "REPLY")
MAX_CALENDAR_BYTES = 1_000_000
FAILED_LISTED_FOR = timedelta(days=7)
# The only extra headers a SendRequest may carry (bulk mail), each at most once.
BULK_HEADERS = ("List-Unsubscribe", "List-Unsubscribe-Post", "Precedence", "Feedback-ID")
MAX_BULK_HEADER_LENGTH = 900


class MailboxLocked(DomainError):
    """The sending mailbox is suspended or disabled."""

    code = ErrorCode.FORBIDDEN


def _addresses(field: str, values: list[str], errors: dict) -> list[str]:
    """Valid addresses with their domains in ASCII (an IDN domain becomes its punycode form)."""
    cleaned = []
    for value in values:
        try:
            ascii_address = address_to_ascii(value)
            validate_email(ascii_address)
            cleaned.append(ascii_address)
        except ValidationError:
            errors.setdefault(field, []).append(f"{value!r} is not a valid email address")
        except InvalidHostname as error:
            errors.setdefault(field, []).append(str(error))
    return cleaned


def _attachments(attachments: list[AttachmentRequest], cap_mb: int, errors: dict) -> list[dict]:
    total, cleaned = 0, []
    for index, attachment in enumerate(attachments):
        problems = []
        try:
            payload = base64.b64decode(attachment.content_base64, validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"attachment {index} ({attachment.filename!r}) is not valid base64")
            payload = b""
        content_type = attachment.content_type or "application/octet-stream"
        if problem := mime_type_problem(content_type):
            problems.append(f"attachment {index}: content_type {problem}")
        if problem := header_problem(attachment.filename):
            problems.append(f"attachment {index}: filename {problem}")
        if problems:
            errors.setdefault("attachments", []).extend(problems)
            continue
        total += len(payload)
        cleaned.append({"filename": attachment.filename, "content_type": content_type,
                        "content_base64": attachment.content_base64})
    if total > cap_mb * 1024 * 1024:
        errors.setdefault("attachments", []).append(
            f"attachments total {total / 1048576:.1f} MB; your plan allows {cap_mb} MB per message"
        )
    return cleaned


def _bulk_headers(headers: tuple[tuple[str, str], ...], errors: dict) -> list[list[str]]:
    """Allowlisted, printable ASCII, once each: they are written as they are (never encoded)."""
    cleaned, seen = [], set()
    for name, value in headers:
        if name not in BULK_HEADERS or name in seen:
            errors.setdefault("headers", []).append(f"{name!r} is not a header a send may set (or is set twice)")
        elif not value.isascii() or header_problem(value) or not 0 < len(value) <= MAX_BULK_HEADER_LENGTH:
            errors.setdefault("headers", []).append(f"{name}: must be 1 to {MAX_BULK_HEADER_LENGTH} printable "
                                                    "ASCII characters on one line")
        else:
            seen.add(name)
            cleaned.append([name, value])
    return cleaned


def _sending_mailbox(account: Account, address: str) -> Mailbox:
    """The account's mailbox with its effective plan, in one hand-written query: building it with
    the ORM cost more CPU than the database spent on it, on every send. The account is the caller's
    (an API key's comes with its plan loaded); a mailbox without a plan of its own takes the
    account's."""
    mailbox_columns, plan_columns, sql = _sending_query(connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(sql, [account.plan_id, account.pk, address.strip().lower()])
        row = cursor.fetchone()
    if row is None:
        raise InvalidFields({"from_email": ["not a mailbox of this account"]})
    mailbox, plan = instances(row, mailbox_columns, plan_columns)
    mailbox.account = account
    if mailbox.plan_id is None:
        mailbox.plan = None
        if not Account.plan.is_cached(account):
            account.plan = plan
    else:
        mailbox.plan = plan
    return mailbox


@cache
def _sending_query(vendor: str) -> tuple[Columns, Columns, str]:
    """Built once per database engine; the address is stored in lower case (mailbox_create), so
    the unique index finds it."""
    mailbox, plan = Columns.of(Mailbox, "m"), Columns.of(Plan, "p")
    sql = (f"SELECT {mailbox.sql}, {plan.sql} FROM {table(Mailbox)} m "
           f"JOIN {table(Plan)} p ON p.id = COALESCE(m.plan_id, %s) WHERE m.account_id = %s AND m.address = %s")
    return mailbox, plan, sql


def mail_send(*, account: Account, user: User | None, request: SendRequest) -> OutboundMessage:
    """Validate a send request and store it as a durable row; nothing is stored when it fails.

    Everything that will become a header is checked here, so an accepted message can always be
    built: the worker never meets a send it has to drop."""
    errors: dict[str, list[str]] = {}
    mailbox = _sending_mailbox(account, request.from_email)
    if not mailbox.is_active:
        raise MailboxLocked(f"{mailbox.address} is suspended and cannot send mail.")
    if problem := header_problem(mailbox.display_name):
        errors["from_email"] = [f"the display name of {mailbox.address} {problem}; change it first"]
    route = send_route(mailbox)
    if route is None:
        errors["from_email"] = [f"{mailbox.address} is connected without its provider's submission server, and its "
                                "domain is not verified by this account: connect it again with smtp_host to send "
                                "from it"]
    plan = mailbox.effective_plan
    sandbox = request.sandbox

    to = _addresses("to", request.to, errors)
    cc = _addresses("cc", request.cc, errors)
    bcc = _addresses("bcc", request.bcc, errors)
    reply_to = _addresses("reply_to", [request.reply_to] if request.reply_to else [], errors)
    if not request.to:
        errors.setdefault("to", []).append("give at least one recipient")
    elif len(request.to) > MAX_RECIPIENTS:
        errors.setdefault("to", []).append(f"at most {MAX_RECIPIENTS} recipients")

    subject, body_html, body_text = request.subject, request.body_html, request.body_text
    if request.template_id is not None:
        try:
            template = template_get(account=account, user=user, template_id=request.template_id)
        except ObjectDoesNotExist:
            errors.setdefault("template_id", []).append("no template with this id")
        else:
            variables = request.variables
            subject = render(subject if subject is not None else template.subject, variables, escape_html=False)
            body_html = render(template.body_html, variables, escape_html=True)
    if subject and (problem := header_problem(subject)):
        where = " (after the template's variables were filled in)" if request.template_id is not None else ""
        errors.setdefault("subject", []).append(f"{problem}{where}")
    if not (body_html.strip() or body_text.strip()) and "template_id" not in errors:
        errors.setdefault("body_html", []).append("give body_html, body_text or template_id")

    attachments = _attachments(request.attachments, plan.attachment_max_mb, errors)
    in_reply_to, references = request.in_reply_to.strip(), " ".join(request.references.split())
    if in_reply_to and (problem := message_ids_problem(in_reply_to, single=True)):
        errors.setdefault("in_reply_to", []).append(problem)
    if references and (problem := message_ids_problem(references, single=False)):
        errors.setdefault("references", []).append(problem)

    calendar = None
    if request.calendar is not None:
        method, ical_text = request.calendar
        if method not in CALENDAR_METHODS or not isinstance(ical_text, str) or not ical_text.strip():
            errors.setdefault("calendar", []).append(f"a calendar part is one of {', '.join(CALENDAR_METHODS)} "
                                                     "with iCalendar text")
        elif len(ical_text.encode()) > MAX_CALENDAR_BYTES:
            errors.setdefault("calendar", []).append("a calendar part may be at most 1 MB")
        else:
            calendar = {"method": method, "ical": ical_text}

    headers = _bulk_headers(request.headers, errors)

    now = timezone.now()
    scheduled_at, window = request.scheduled_at, request.unsend_window
    if scheduled_at is not None:
        if sandbox:
            errors.setdefault("scheduled_at", []).append("sandbox sends cannot be scheduled")
        elif scheduled_at <= now:
            errors.setdefault("scheduled_at", []).append("scheduled_at must be in the future")
    if window is not None and not 1 <= window <= MAX_UNSEND_WINDOW:
        errors.setdefault("unsend_window", []).append(f"unsend_window is 1 to {MAX_UNSEND_WINDOW} seconds")
    if errors:
        raise InvalidFields(errors)

    due_at = scheduled_at or (now + timedelta(seconds=window) if window else now)
    held = scheduled_at is not None or bool(window)
    payload = {"to": to, "cc": cc, "bcc": bcc, "reply_to": reply_to[0] if reply_to else "",
               "subject": subject or "", "body_html": body_html, "body_text": body_text,
               "attachments": attachments, "pending": to + cc + bcc}
    if in_reply_to:  # only when given: a payload without threading stays as it always was
        payload["in_reply_to"] = in_reply_to
    if references:
        payload["references"] = references
    if calendar:  # likewise only for invitations
        payload["calendar"] = calendar
    if headers:  # and for bulk mail
        payload["headers"] = headers
    if request.verp:
        payload["verp"] = True
    if request.written_in_webmail:
        payload["webmail"] = True
    if not mailbox.is_managed:  # a connected mailbox: through its provider, or our relay on its verified domain
        payload["via"] = route
    reserve = not sandbox and route == "platform"
    if not sandbox and route == "provider":  # no quota of ours holds these back: an hourly limit does
        action_count(f"provider-sends:{account.pk}", limit=settings.CONNECTED_MAILBOX_SENDS_PER_HOUR,
                     what="messages sent through connected mailboxes' own servers")
    # A send that reserves no quota is one INSERT, atomic on its own; with quota, the row goes in
    # first so that the quota rows stay locked only from their UPDATEs to the commit.
    with transaction.atomic() if reserve else nullcontext():
        message = OutboundMessage.objects.create(
            account=account,
            mailbox=mailbox,
            status=OutboundMessage.Status.SCHEDULED if held else OutboundMessage.Status.QUEUED,
            sandbox=sandbox,
            track_opens=request.track_opens and plan.read_receipts,
            payload=payload,
            scheduled_at=scheduled_at,
            unsend_window=window or None,
            due_at=due_at,
        )
        if reserve:
            quota_reserve(mailbox=mailbox, at=due_at)
        if not held:
            transaction.on_commit(lambda: enqueue(DISPATCH_DUE_MAIL))  # at once outside a transaction
    return message


def scheduled_list(*, account: Account, status: str | None = None):
    """Mail that has not gone out yet (waiting, due, being sent or retried), and mail that failed for
    good in the last FAILED_LISTED_FOR: a send the worker could not deliver is never out of sight."""
    Status = OutboundMessage.Status
    rows = OutboundMessage.objects.filter(account=account).select_related("mailbox")
    waiting = Q(status__in=[Status.SCHEDULED, Status.QUEUED, Status.SENDING, Status.HELD])
    failed = Q(status=Status.FAILED, finished_at__gte=timezone.now() - FAILED_LISTED_FOR)
    if status == Status.FAILED:
        return rows.filter(failed)
    if status:
        return rows.filter(status=status)
    return rows.filter(waiting | failed)


def scheduled_cancel(*, account: Account, scheduled_id: int) -> None:
    """Cancel before dispatch; a message already sent (or claimed) or not yours does not exist here."""
    message = OutboundMessage.objects.select_related("mailbox").get(account=account, pk=scheduled_id)
    cancelled = OutboundMessage.objects.filter(pk=message.pk, status=OutboundMessage.Status.SCHEDULED).update(
        status=OutboundMessage.Status.CANCELLED, finished_at=timezone.now()
    )
    if not cancelled:
        raise OutboundMessage.DoesNotExist("this message is no longer scheduled")
    if not message.sandbox and (message.mailbox.is_managed or message.payload.get("via") == "platform"):
        quota_release(mailbox=message.mailbox, at=message.due_at)  # a scheduled row's due_at never moved
