"""When each enrolment's next step is due, and who may not be written to: shared by the life cycle
(services) and the engine."""
from datetime import datetime, timedelta

from django.db.models import Q

from campaigns.models import Enrollment, StepDelivery, Suppression


def due_at(enrollment: Enrollment, position: int):
    """Enrolment time plus the delays of the steps up to and including `position`."""
    hours = sum(enrollment.campaign.steps.filter(position__lte=position).values_list("delay_hours", flat=True))
    return enrollment.enrolled_at + timedelta(hours=hours)


def schedule_next(enrollment: Enrollment, *, after_position: int,
                  previous_sent_at: datetime | None = None) -> StepDelivery | None:
    """The delivery of the step after `after_position` (made once), or None when there is none left:
    then the enrolment is complete.

    It is due at the enrolment time plus the delays of the steps up to it; when the previous step
    went out late (`previous_sent_at`: a pause, a full quota), not before its own delay after that,
    so two steps never arrive closer together than the campaign says."""
    steps = list(enrollment.campaign.steps.order_by("position").values_list("pk", "position", "delay_hours"))
    following = [(pk, position, delay) for pk, position, delay in steps if position > after_position]
    if not following:
        Enrollment.objects.filter(pk=enrollment.pk, status=Enrollment.Status.ACTIVE).update(
            status=Enrollment.Status.COMPLETED)
        return None
    step_id, position, delay = following[0]
    due = enrollment.enrolled_at + timedelta(hours=sum(d for _, p, d in steps if p <= position))
    if previous_sent_at is not None:
        due = max(due, previous_sent_at + timedelta(hours=delay))
    # One statement, no savepoint: the row exists already only if a step was added meanwhile.
    StepDelivery.objects.bulk_create([StepDelivery(enrollment=enrollment, step_id=step_id, due_at=due)],
                                     ignore_conflicts=True)
    return StepDelivery.objects.filter(enrollment=enrollment, step_id=step_id).first()


def suppressed(*, account_id: int, emails) -> set[str]:
    """Which of these addresses no campaign of this account may write to (its list or the platform's)."""
    emails = [email.lower() for email in emails]
    rows = Suppression.objects.filter(Q(account_id=account_id) | Q(account__isnull=True), email__in=emails)
    return set(rows.values_list("email", flat=True))
