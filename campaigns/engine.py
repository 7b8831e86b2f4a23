"""The campaign engine, run by the sweep: deliveries that fell due go out through mail_send (the
same dispatch as POST /mail/send: DKIM, Sent copy, events), each in its own transaction that claims
the row (FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite's write transactions run one at a time),
writes the OutboundMessage, marks the row sent and schedules the contact's next step. A worker
killed at any moment leaves either all of that or none of it: no contact gets a step twice, none is
skipped. The mailbox's send quota makes mail wait (its retry time) rather than fail; each account
also has an hourly campaign budget (CAMPAIGN_SENDS_PER_HOUR)."""
import hashlib
import html
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from campaigns import deliverability
from campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from campaigns.schedule import schedule_next, suppressed
from mailcore.errors import DomainError
from mailcore.monitoring import Queue, queue_of
from mailcore.sending.inputs import SendRequest
from mailcore.sending.quota import SendQuotaExceeded
from mailcore.sending.services import MailboxLocked, mail_send

log = logging.getLogger(__name__)

BATCH = 200
# A delivery the engine could not handle for a reason it did not expect (a bug, a lost database
# connection) is tried again this much later; the rest of the batch carries on.
ERROR_RETRY = timedelta(minutes=5)


# 2**64 / golden ratio: Fibonacci hashing. Consecutive integers times this, modulo 2**64, spread
# evenly over the range (a low-discrepancy sequence), so any run of enrolments splits as set.
FIBONACCI = 0x9E3779B97F4A7C15


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def variant_for(step: CampaignStep, email: str, *, enrollment_id: int | None = None) -> str:
    """"a" or "b", the same for a contact every time, against the step's ab_split_percent.

    With the enrolment (the engine): a Fibonacci hash of its id, offset by a hash of (campaign,
    step). The enrolments of a campaign are made together with consecutive ids, so the split is
    as set to within a fraction of a point for any audience size (an independent hash per address
    drifts: over 1,000 contacts a 50% split misses by more than 3 points one time in 20), and each
    step draws a different half. Without it (a preview): a hash of (campaign, step, address)."""
    if not step.subject_b:
        return "a"
    if enrollment_id is None:
        point = _hash64(f"{step.campaign_id}:{step.pk}:{email.lower()}")
    else:
        point = (_hash64(f"{step.campaign_id}:{step.pk}") + enrollment_id * FIBONACCI) % 2**64
    return "a" if (point * 100) >> 64 < step.ab_split_percent else "b"


# {{name}}, {{ first_name }}, {{first_name|there}}: a placeholder, with the text to use when its value is empty.
PLACEHOLDER = re.compile(r"\{\{\s*(name|first_name|email)\s*(?:\|([^{}|]*))?\}\}")


def personalise(text: str, enrollment: Enrollment, *, as_html: bool = True) -> str:
    """{{name}}, {{first_name}} and {{email}} in a step's subject or HTML (values escaped in HTML), each
    with an optional fallback for an empty value, {{first_name|there}} (the author's own text, as written).
    A name that is only the address (what a contact given no name is called) counts as no name."""
    name = (enrollment.name or "").strip()
    if name.lower() == (enrollment.email or "").strip().lower():
        name = ""
    values = {"name": name, "first_name": name.split(" ")[0] if name else "", "email": enrollment.email}

    def fill(found: re.Match) -> str:
        value = values[found.group(1)]
        if value:
            return html.escape(value) if as_html else value
        return (found.group(2) or "").strip()

    return PLACEHOLDER.sub(fill, text)


def _hour_start(now):
    return now.replace(minute=0, second=0, microsecond=0)


def _budget_left(account_id: int, now) -> int:
    sent = StepDelivery.objects.filter(enrollment__campaign__account_id=account_id, status=StepDelivery.Status.SENT,
                                       sent_at__gte=_hour_start(now)).count()
    return settings.CAMPAIGN_SENDS_PER_HOUR - sent


@dataclass
class Batch:
    """What one run of the engine learns once and reuses: each account's campaign budget left this
    hour, the mailboxes whose send quota is used up (with when to try again), and the campaigns
    with their accounts (what the engine reads of them cannot change while they are sending)."""
    budgets: dict[int, int] = field(default_factory=dict)
    quota_waits: dict[int, datetime] = field(default_factory=dict)
    campaigns: dict[int, Campaign] = field(default_factory=dict)

    def campaign(self, campaign_id: int) -> Campaign:
        if campaign_id not in self.campaigns:
            self.campaigns[campaign_id] = Campaign.objects.select_related("account").get(pk=campaign_id)
        return self.campaigns[campaign_id]


def _stop(enrollment: Enrollment, reason: str) -> None:
    Enrollment.objects.filter(pk=enrollment.pk).update(status=Enrollment.Status.STOPPED, stop_reason=reason)
    StepDelivery.objects.filter(enrollment=enrollment, status=StepDelivery.Status.PENDING).update(
        status=StepDelivery.Status.SKIPPED, last_error=reason)


def _claim(delivery_id: int, now, batch: Batch) -> StepDelivery | None:
    """The delivery, locked for this transaction, if it is still pending, due, of a sending campaign,
    and no other worker holds it, with its step and enrolment as they are now. One query."""
    rows = StepDelivery.objects.filter(pk=delivery_id, status=StepDelivery.Status.PENDING, due_at__lte=now,
                                       enrollment__campaign__status=Campaign.Status.SENDING)
    if connection.features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True, of=("self",))
    delivery = rows.select_related("step", "enrollment").first()
    if delivery is None:
        return None
    delivery.enrollment.campaign = batch.campaign(delivery.enrollment.campaign_id)
    if connection.vendor == "postgresql":
        # A shared lock on the campaign row until commit: the step services (add, change, delete)
        # lock it FOR UPDATE, so they wait for the deliveries being written and these see their
        # steps whole. Shared, so workers never wait for each other; pause (an UPDATE of a non-key
        # column) does not wait either.
        with connection.cursor() as cursor:
            cursor.execute(f'SELECT 1 FROM "{Campaign._meta.db_table}" WHERE "id" = %s FOR KEY SHARE',
                           [delivery.enrollment.campaign_id])
    return delivery


def _postpone(delivery: StepDelivery, until, reason: str = "") -> None:
    delivery.due_at = until
    fields = ["due_at"]
    if reason:
        delivery.last_error = reason[:2000]
        fields.append("last_error")
    delivery.save(update_fields=fields)


def deliver(delivery_id: int, budgets: dict[int, int] | Batch) -> str:
    """Send one due delivery if it is still pending and nobody else holds it; says what happened:
    sent, taken (not due, not pending, held by another worker, or its campaign is not sending),
    skipped, throttled, quota, paused or failed."""
    batch = budgets if isinstance(budgets, Batch) else Batch(budgets=budgets)
    now = timezone.now()
    with transaction.atomic():
        delivery = _claim(delivery_id, now, batch)
        if delivery is None:
            return "taken"
        enrollment, step = delivery.enrollment, delivery.step
        campaign = enrollment.campaign
        if enrollment.status != Enrollment.Status.ACTIVE:
            delivery.status, delivery.last_error = StepDelivery.Status.SKIPPED, enrollment.stop_reason
            delivery.save(update_fields=["status", "last_error"])
            return "skipped"
        if suppressed(account_id=campaign.account_id, emails=[enrollment.email]):
            _stop(enrollment, "suppressed")
            return "skipped"
        if campaign.mailbox_id in batch.quota_waits:
            _postpone(delivery, batch.quota_waits[campaign.mailbox_id])
            return "quota"
        if campaign.account_id not in batch.budgets:
            batch.budgets[campaign.account_id] = _budget_left(campaign.account_id, now)
        if batch.budgets[campaign.account_id] <= 0:
            _postpone(delivery, _hour_start(now) + timedelta(hours=1))
            return "throttled"
        delivery.variant = variant_for(step, enrollment.email, enrollment_id=enrollment.pk)
        request = deliverability.decorate(delivery, SendRequest(
            from_email=campaign.from_email, to=[enrollment.email],
            subject=personalise(step.subject_b if delivery.variant == "b" else step.subject, enrollment,
                                as_html=False),
            body_html=personalise(step.body_html, enrollment)))
        try:  # mail_send writes in a transaction of its own (a savepoint here): a refusal leaves nothing
            message = mail_send(account=campaign.account, user=None, request=request)
        except SendQuotaExceeded as exc:
            batch.quota_waits[campaign.mailbox_id] = now + timedelta(seconds=exc.retry_after or 3600)
            _postpone(delivery, batch.quota_waits[campaign.mailbox_id])
            return "quota"
        except MailboxLocked as exc:
            # The sending mailbox was suspended: hold the whole campaign rather than fail everyone.
            # Resuming it (once the mailbox is active again) carries on from here.
            Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.SENDING).update(
                status=Campaign.Status.PAUSED, paused_at=now)
            _postpone(delivery, now, exc.detail)
            log.warning("campaign %s paused: %s", campaign.pk, exc.detail)
            return "paused"
        except DomainError as exc:
            delivery.status, delivery.last_error = StepDelivery.Status.FAILED, exc.detail[:2000]
            delivery.save(update_fields=["status", "last_error", "variant"])
            _stop(enrollment, "refused")
            return "failed"
        delivery.status, delivery.outbound, delivery.sent_at = StepDelivery.Status.SENT, message, now
        delivery.save(update_fields=["status", "outbound", "sent_at", "variant"])
        batch.budgets[campaign.account_id] -= 1
        schedule_next(enrollment, after_position=step.position, previous_sent_at=now)
    return "sent"


def campaigns_finish(campaign_ids=None) -> int:
    """Sending campaigns with no active enrolment left are complete (`campaign_ids`: only these).
    Each is locked and checked again, so a step added at the same moment is never lost."""
    candidates = Campaign.objects.filter(status=Campaign.Status.SENDING).exclude(
        enrollments__status=Enrollment.Status.ACTIVE)
    if campaign_ids is not None:
        candidates = candidates.filter(pk__in=campaign_ids)
    finished = 0
    for campaign_id in list(candidates.values_list("pk", flat=True)):
        with transaction.atomic():
            locked = Campaign.objects.select_for_update().filter(pk=campaign_id, status=Campaign.Status.SENDING)
            if not locked.exists() or Enrollment.objects.filter(campaign_id=campaign_id,
                                                                status=Enrollment.Status.ACTIVE).exists():
                continue
            finished += locked.update(status=Campaign.Status.COMPLETED, finished_at=timezone.now())
    return finished


def campaigns_run_due(*, limit: int = BATCH) -> int:
    """The sweep job: send up to `limit` due deliveries of sending campaigns, oldest due first;
    returns how many were sent."""
    due = list(StepDelivery.objects.filter(
        status=StepDelivery.Status.PENDING, due_at__lte=timezone.now(),
        enrollment__campaign__status=Campaign.Status.SENDING,
    ).order_by("due_at", "pk").values_list("pk", flat=True)[:limit])
    batch = Batch()
    sent = 0
    for delivery_id in due:
        try:
            sent += deliver(delivery_id, batch) == "sent"
        except Exception as error:  # noqa: BLE001 - one bad row never holds up the others
            log.exception("campaign delivery %s failed; trying again in %s", delivery_id, ERROR_RETRY)
            StepDelivery.objects.filter(pk=delivery_id, status=StepDelivery.Status.PENDING).update(
                due_at=timezone.now() + ERROR_RETRY, last_error=f"engine error: {error.__class__.__name__}")
    campaigns_finish()
    return sent


def steps_queue(*, now: datetime) -> Queue:
    """The operator's view of the engine's work (mailcore.monitoring): steps due and not yet sent."""
    steps = StepDelivery.objects.filter(status=StepDelivery.Status.PENDING, due_at__lte=now)
    return queue_of("campaign_steps", steps, "due_at", now)
