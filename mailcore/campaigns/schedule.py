"""When each enrolment's next step is due, and who may not be written to: shared by the life cycle
(services) and the engine."""
from datetime import timedelta

from django.db.models import Q

from mailcore.campaigns.models import Enrollment, StepDelivery, Suppression


def due_at(enrollment: Enrollment, position: int):
    """Enrolment time plus the delays of the steps up to and including `position`."""
    hours = sum(enrollment.campaign.steps.filter(position__lte=position).values_list("delay_hours", flat=True))
    return enrollment.enrolled_at + timedelta(hours=hours)


def schedule_next(enrollment: Enrollment, *, after_position: int) -> StepDelivery | None:
    """The delivery of the step after `after_position` (made once), or None when there is none left:
    then the enrolment is complete."""
    step = enrollment.campaign.steps.filter(position__gt=after_position).order_by("position").first()
    if step is None:
        Enrollment.objects.filter(pk=enrollment.pk, status=Enrollment.Status.ACTIVE).update(
            status=Enrollment.Status.COMPLETED)
        return None
    delivery, _ = StepDelivery.objects.get_or_create(enrollment=enrollment, step=step,
                                                     defaults={"due_at": due_at(enrollment, step.position)})
    return delivery


def suppressed(*, account_id: int, emails) -> set[str]:
    """Which of these addresses no campaign of this account may write to (its list or the platform's)."""
    emails = [email.lower() for email in emails]
    rows = Suppression.objects.filter(Q(account_id=account_id) | Q(account__isnull=True), email__in=emails)
    return set(rows.values_list("email", flat=True))
