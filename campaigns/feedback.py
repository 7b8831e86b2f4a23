"""What became of campaign mail: the outcomes dispatch, the report handling and the tracking
endpoints report (mailcore.outbound.feedback.outcome_report) set each delivery's timestamps once,
and bounces and complaints suppress the address for the campaign's account.

- delivered: the relay (or the local delivery) accepted the message -> delivered_at.
- opened / clicked: the tracking pixel or a tracked link was fetched -> opened_at / clicked_at (a
  click sets opened_at too: it proves the mail was opened with images off). Approximate: image
  proxies and link scanners fetch them without a person.
- bounced, only when verified (our relay's own answer, or a report at the message's signed return
  path; a report sent to a mailbox could name anyone): bounced_at, and
  - a hard bounce (5.x.x, except 5.2.2 mailbox full and 5.7.x policy refusals, which say nothing
    about the address) suppresses at once;
  - a soft bounce (a failure after temporary errors, 5.2.2, 5.7.x) suppresses once the address has
    SOFT_BOUNCE_LIMIT of them within SOFT_BOUNCE_WINDOW in the account.
- complained (an ARF report at the return path or at a mailbox: a person pressed "spam" on mail
  they got) -> complained_at and suppressed at once.
Suppressing adds a Suppression row for the account (the first reason stays) and stops the account's
active enrolments of the address; their pending deliveries are skipped.
"""
from datetime import timedelta

from django.db import IntegrityError, transaction

from campaigns.models import Campaign, Enrollment, StepDelivery, Suppression
from mailcore.outbound.feedback import SendOutcome

SOFT_BOUNCE_LIMIT = 3
SOFT_BOUNCE_WINDOW = timedelta(days=30)
HARD, SOFT = "hard bounce", "soft bounce"  # how last_error records a bounce (counted for soft ones)
STOP_REASONS = {
    Suppression.Reason.UNSUBSCRIBED: "unsubscribed",
    Suppression.Reason.HARD_BOUNCE: "bounced",
    Suppression.Reason.SOFT_BOUNCES: "bounced",
    Suppression.Reason.COMPLAINT: "complained",
    Suppression.Reason.MANUAL: "suppressed",
}


def bounce_is_hard(status: str) -> bool:
    """A permanent failure that is about the address itself."""
    return status.startswith("5.") and status != "5.2.2" and not status.startswith("5.7.")


def suppress(*, account_id: int, email: str, reason: str, campaign: Campaign | None = None) -> Suppression:
    """The account's suppression of the address (made once; the first reason stays), and its active
    enrolments stopped with their pending steps skipped."""
    email = email.strip().lower()
    try:
        with transaction.atomic():
            row, _ = Suppression.objects.get_or_create(account_id=account_id, email=email,
                                                       defaults={"reason": reason, "campaign": campaign})
    except IntegrityError:  # made at the same moment by another report
        row = Suppression.objects.get(account_id=account_id, email=email)
    enrollments = Enrollment.objects.filter(campaign__account_id=account_id, email=email,
                                            status=Enrollment.Status.ACTIVE)
    ids = list(enrollments.values_list("pk", flat=True))
    if ids:
        stop_reason = STOP_REASONS.get(reason, "suppressed")
        Enrollment.objects.filter(pk__in=ids, status=Enrollment.Status.ACTIVE).update(
            status=Enrollment.Status.STOPPED, stop_reason=stop_reason)
        StepDelivery.objects.filter(enrollment_id__in=ids, status=StepDelivery.Status.PENDING).update(
            status=StepDelivery.Status.SKIPPED, last_error=stop_reason)
    return row


def _mark(delivery: StepDelivery, field: str, at) -> bool:
    """Set the timestamp if it is not set yet; True when this call set it."""
    return bool(StepDelivery.objects.filter(pk=delivery.pk, **{f"{field}__isnull": True}).update(**{field: at}))


def _bounced(delivery: StepDelivery, outcome: SendOutcome) -> None:
    hard = bounce_is_hard(outcome.status)
    note = f"{HARD if hard else SOFT} {outcome.status}: {outcome.detail}"[:2000]
    if not StepDelivery.objects.filter(pk=delivery.pk, bounced_at__isnull=True).update(
            bounced_at=outcome.at, last_error=note):
        return  # one bounce per delivery counts (a DSN may come twice)
    enrollment = delivery.enrollment
    account_id = enrollment.campaign.account_id
    if hard:
        suppress(account_id=account_id, email=enrollment.email, reason=Suppression.Reason.HARD_BOUNCE,
                 campaign=enrollment.campaign)
        return
    soft = StepDelivery.objects.filter(enrollment__campaign__account_id=account_id, enrollment__email=enrollment.email,
                                       bounced_at__gte=outcome.at - SOFT_BOUNCE_WINDOW,
                                       last_error__startswith=SOFT).count()
    if soft >= SOFT_BOUNCE_LIMIT:
        suppress(account_id=account_id, email=enrollment.email, reason=Suppression.Reason.SOFT_BOUNCES,
                 campaign=enrollment.campaign)


def outcome_record(outcome: SendOutcome) -> None:
    """The listener: the outcome on the campaign delivery the message was, if it was one."""
    delivery = (StepDelivery.objects.select_related("enrollment__campaign")
                .filter(outbound_id=outcome.message.pk).first())
    if delivery is None:
        return
    if outcome.kind == "delivered":
        _mark(delivery, "delivered_at", outcome.at)
    elif outcome.kind == "opened":
        _mark(delivery, "opened_at", outcome.at)
    elif outcome.kind == "clicked":
        _mark(delivery, "clicked_at", outcome.at)
        _mark(delivery, "opened_at", outcome.at)
    elif outcome.kind == "bounced" and outcome.verified:
        _bounced(delivery, outcome)
    elif outcome.kind == "complained":
        _mark(delivery, "complained_at", outcome.at)
        enrollment = delivery.enrollment
        suppress(account_id=enrollment.campaign.account_id, email=enrollment.email,
                 reason=Suppression.Reason.COMPLAINT, campaign=enrollment.campaign)

