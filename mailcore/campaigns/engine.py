"""The campaign engine, run by the sweep: deliveries that fell due go out through mail_send (the
same dispatch as POST /mail/send: DKIM, Sent copy, events), each in its own transaction that claims
the row (FOR UPDATE SKIP LOCKED on PostgreSQL), writes the OutboundMessage and marks the row sent.
A worker killed at any moment leaves either all of that or none of it: no contact gets a step
twice, none is skipped. The mailbox's send quota makes mail wait (its retry time) rather than fail;
each account also has an hourly campaign budget (CAMPAIGN_SENDS_PER_HOUR)."""
import hashlib
import html
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from mailcore.campaigns import deliverability
from mailcore.campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from mailcore.campaigns.schedule import schedule_next, suppressed
from mailcore.errors import DomainError
from mailcore.sending.inputs import SendRequest
from mailcore.sending.quota import SendQuotaExceeded
from mailcore.sending.services import mail_send

log = logging.getLogger(__name__)

BATCH = 200


def variant_for(step: CampaignStep, email: str) -> str:
    """"a" or "b", the same for a contact every time: a hash of (campaign, step, address) against the split."""
    if not step.subject_b:
        return "a"
    digest = hashlib.sha256(f"{step.campaign_id}:{step.pk}:{email.lower()}".encode()).digest()
    return "a" if int.from_bytes(digest[:8], "big") % 100 < step.ab_split_percent else "b"


def personalise(text: str, enrollment: Enrollment, *, as_html: bool = True) -> str:
    """{{name}}, {{first_name}} and {{email}} in a step's subject or HTML (escaped in HTML)."""
    name = enrollment.name or ""
    values = {"name": name, "first_name": name.split(" ")[0] if name else "", "email": enrollment.email}
    for key, value in values.items():
        for spelling in (f"{{{{{key}}}}}", f"{{{{ {key} }}}}"):
            text = text.replace(spelling, html.escape(value) if as_html else value)
    return text


def _hour_start(now):
    return now.replace(minute=0, second=0, microsecond=0)


def _budget_left(account_id: int, now) -> int:
    sent = StepDelivery.objects.filter(enrollment__campaign__account_id=account_id, status=StepDelivery.Status.SENT,
                                       sent_at__gte=_hour_start(now)).count()
    return settings.CAMPAIGN_SENDS_PER_HOUR - sent


def _stop(enrollment: Enrollment, reason: str) -> None:
    Enrollment.objects.filter(pk=enrollment.pk).update(status=Enrollment.Status.STOPPED, stop_reason=reason)
    StepDelivery.objects.filter(enrollment=enrollment, status=StepDelivery.Status.PENDING).update(
        status=StepDelivery.Status.SKIPPED, last_error=reason)


def deliver(delivery_id: int, budgets: dict[int, int]) -> str:
    """Send one due delivery if it is still pending and nobody else holds it; says what happened."""
    now = timezone.now()
    with transaction.atomic():
        delivery = (StepDelivery.objects.select_for_update(skip_locked=True, of=("self",))
                    .select_related("step", "enrollment__campaign__mailbox", "enrollment__campaign__account")
                    .filter(pk=delivery_id, status=StepDelivery.Status.PENDING, due_at__lte=now).first())
        if delivery is None:
            return "taken"
        enrollment, step = delivery.enrollment, delivery.step
        campaign = enrollment.campaign
        if Campaign.objects.filter(pk=campaign.pk).values_list("status", flat=True).first() != Campaign.Status.SENDING:
            return "paused"
        if enrollment.status != Enrollment.Status.ACTIVE:
            delivery.status, delivery.last_error = StepDelivery.Status.SKIPPED, enrollment.stop_reason
            delivery.save(update_fields=["status", "last_error"])
            return "skipped"
        if suppressed(account_id=campaign.account_id, emails=[enrollment.email]):
            _stop(enrollment, "suppressed")
            return "skipped"
        if campaign.account_id not in budgets:
            budgets[campaign.account_id] = _budget_left(campaign.account_id, now)
        if budgets[campaign.account_id] <= 0:
            delivery.due_at = _hour_start(now) + timedelta(hours=1)
            delivery.save(update_fields=["due_at"])
            return "throttled"
        variant = variant_for(step, enrollment.email)
        request = deliverability.decorate(delivery, SendRequest(
            from_email=campaign.from_email, to=[enrollment.email],
            subject=personalise(step.subject_b if variant == "b" else step.subject, enrollment, as_html=False),
            body_html=personalise(step.body_html, enrollment)))
        try:
            with transaction.atomic():
                message = mail_send(account=campaign.account, user=None, request=request)
        except SendQuotaExceeded as exc:
            delivery.due_at = now + timedelta(seconds=exc.retry_after or 3600)
            delivery.save(update_fields=["due_at"])
            return "quota"
        except DomainError as exc:
            delivery.status, delivery.last_error = StepDelivery.Status.FAILED, exc.detail[:2000]
            delivery.save(update_fields=["status", "last_error"])
            _stop(enrollment, "refused")
            return "failed"
        delivery.status, delivery.outbound, delivery.sent_at, delivery.variant = (
            StepDelivery.Status.SENT, message, now, variant)
        delivery.save(update_fields=["status", "outbound", "sent_at", "variant"])
        budgets[campaign.account_id] -= 1
        schedule_next(enrollment, after_position=step.position)
    return "sent"


def campaigns_finish() -> int:
    """Sending campaigns with no active enrolment left are complete."""
    done = Campaign.objects.filter(status=Campaign.Status.SENDING).exclude(
        enrollments__status=Enrollment.Status.ACTIVE)
    return done.update(status=Campaign.Status.COMPLETED, finished_at=timezone.now())


def campaigns_run_due(*, limit: int = BATCH) -> int:
    """The sweep job: send up to `limit` due deliveries of sending campaigns, oldest due first."""
    due = list(StepDelivery.objects.filter(
        status=StepDelivery.Status.PENDING, due_at__lte=timezone.now(),
        enrollment__campaign__status=Campaign.Status.SENDING).order_by("due_at", "pk").values_list("pk", flat=True)[:limit])
    budgets: dict[int, int] = {}
    sent = sum(deliver(delivery_id, budgets) == "sent" for delivery_id in due)
    campaigns_finish()
    return sent
