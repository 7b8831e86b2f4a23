"""Writes of campaigns and steps, and the life cycle: draft -> sending <-> paused -> completed, or
cancelled from any state but completed. Sending enrols the audience once (one row per address)
and schedules each enrolment's first step; the engine (campaigns.engine) does the rest."""
from datetime import timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from campaigns.schedule import schedule_next, suppressed
from campaigns.segments import SegmentError, segment_query
from contacts.models import AddressBook, Contact, ContactGroup
from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox

EDITABLE = (Campaign.Status.DRAFT,)
STEP_FIELDS = ("delay_hours", "subject", "subject_b", "ab_split_percent", "body_html")


class CampaignInvalid(DomainError):
    code = ErrorCode.INVALID


class CampaignState(DomainError):
    """The campaign's state does not allow this (409)."""
    code = ErrorCode.CONFLICT


def _check_segment(book: AddressBook, segment) -> None:
    try:
        segment_query(segment, group_ids=set(book.groups.values_list("pk", flat=True)))
    except SegmentError as exc:
        raise CampaignInvalid(f"segment_filter: {exc}") from exc


@transaction.atomic
def campaign_create(*, mailbox: Mailbox, book: AddressBook, from_email: str, name: str, subject: str,
                    body_html: str, group: ContactGroup | None = None, segment_filter=None,
                    postal_address: str = "") -> Campaign:
    """A draft with its first step (a campaign starts as a single send)."""
    if group is not None and group.book_id != book.pk:
        raise CampaignInvalid("group_id: not a group of these contacts.")
    _check_segment(book, segment_filter or [])
    campaign = Campaign.objects.create(account=mailbox.account, mailbox=mailbox, book=book, name=name.strip(),
                                       from_email=from_email.strip().lower(), group=group,
                                       segment_filter=segment_filter or [], postal_address=postal_address.strip())
    CampaignStep.objects.create(campaign=campaign, position=1, subject=subject, body_html=body_html)
    return campaign


@transaction.atomic
def campaign_update(*, campaign: Campaign, **changes) -> Campaign:
    """Change a draft: name, from_email, group, segment_filter, and the first step's subject/body_html."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status not in EDITABLE:
        raise CampaignState(f"A {campaign.status} campaign can no longer be changed; only drafts can.")
    first = campaign.steps.order_by("position").first()
    for name, value in changes.items():
        if name in ("subject", "body_html"):
            setattr(first, name, value)
        elif name == "group":
            if value is not None and value.book_id != campaign.book_id:
                raise CampaignInvalid("group_id: not a group of these contacts.")
            campaign.group = value
        elif name == "segment_filter":
            _check_segment(campaign.book, value or [])
            campaign.segment_filter = value or []
        elif name in ("name", "from_email", "postal_address"):
            setattr(campaign, name, value.strip().lower() if name == "from_email" else value.strip())
        else:
            raise TypeError(f"unknown campaign field {name!r}")
    campaign.save()
    if first is not None:
        first.save()
    return campaign


def campaign_delete(*, campaign: Campaign) -> None:
    """A draft, paused, completed or cancelled campaign goes with its steps and history; a sending one
    must be paused or cancelled first (so no delivery is half-way)."""
    if campaign.status == Campaign.Status.SENDING:
        raise CampaignState("Pause or cancel the campaign before deleting it.")
    campaign.delete()


def _renumber(campaign: Campaign) -> None:
    for position, step in enumerate(campaign.steps.order_by("position", "pk"), start=1):
        if step.position != position:
            CampaignStep.objects.filter(pk=step.pk).update(position=position + 10_000)
    for position, step in enumerate(campaign.steps.order_by("position", "pk"), start=1):
        CampaignStep.objects.filter(pk=step.pk).update(position=position)


def _steps_locked(campaign: Campaign) -> Campaign:
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status == Campaign.Status.CANCELLED:
        raise CampaignState("A cancelled campaign cannot change.")
    return campaign


@transaction.atomic
def step_add(*, campaign: Campaign, subject: str, body_html: str, delay_hours: int = 0, subject_b: str = "",
             ab_split_percent: int = 50) -> CampaignStep:
    """A step after the last one. On a running or finished campaign, the enrolments that got every
    step so far get it too, `delay_hours` after their last one was due."""
    campaign = _steps_locked(campaign)
    position = (campaign.steps.order_by("-position").values_list("position", flat=True).first() or 0) + 1
    step = CampaignStep.objects.create(campaign=campaign, position=position, delay_hours=delay_hours, subject=subject,
                                       subject_b=subject_b, ab_split_percent=ab_split_percent, body_html=body_html)
    if campaign.status in (Campaign.Status.SENDING, Campaign.Status.PAUSED, Campaign.Status.COMPLETED):
        offset = timedelta(hours=sum(campaign.steps.values_list("delay_hours", flat=True)))
        finished = campaign.enrollments.filter(status=Enrollment.Status.COMPLETED)
        StepDelivery.objects.bulk_create([
            StepDelivery(enrollment=enrollment, step=step, due_at=enrollment.enrolled_at + offset)
            for enrollment in finished], ignore_conflicts=True)
        finished.update(status=Enrollment.Status.ACTIVE)
        if campaign.status == Campaign.Status.COMPLETED:
            Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.SENDING, finished_at=None)
    return step


@transaction.atomic
def step_update(*, step: CampaignStep, **changes) -> CampaignStep:
    """Change a step that has not gone to anyone yet."""
    _steps_locked(step.campaign)
    if step.deliveries.exclude(status=StepDelivery.Status.PENDING).exists():
        raise CampaignState("This step has gone out to some contacts already; add a new step instead.")
    for name, value in changes.items():
        if name not in STEP_FIELDS:
            raise TypeError(f"unknown step field {name!r}")
        setattr(step, name, value)
    step.save()
    return step


@transaction.atomic
def step_delete(*, step: CampaignStep) -> None:
    """Remove a step that has not gone to anyone yet (the only step of a campaign stays)."""
    campaign = _steps_locked(step.campaign)
    if campaign.steps.count() == 1:
        raise CampaignState("A campaign keeps at least one step.")
    if step.deliveries.exclude(status=StepDelivery.Status.PENDING).exists():
        raise CampaignState("This step has gone out to some contacts already.")
    pending = list(step.deliveries.select_related("enrollment"))
    step.delete()
    _renumber(campaign)
    for delivery in pending:
        schedule_next(delivery.enrollment, after_position=step.position - 1)


def audience(*, campaign: Campaign) -> QuerySet[Contact]:
    """The contacts the campaign reaches: its book, its group, its segment, with an address."""
    contacts = Contact.objects.filter(book=campaign.book).exclude(email="")
    if campaign.group_id:
        contacts = contacts.filter(groups=campaign.group_id)
    query = segment_query(campaign.segment_filter,
                          group_ids=set(campaign.book.groups.values_list("pk", flat=True)))
    return contacts.filter(query).distinct()


@transaction.atomic
def campaign_send(*, campaign: Campaign) -> int:
    """Start a draft: enrol the audience (suppressed addresses left out) and schedule their first
    step. Returns how many were enrolled."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status != Campaign.Status.DRAFT:
        raise CampaignState(f"The campaign is {campaign.status}; only a draft can be sent.")
    if not campaign.mailbox.is_active:
        raise CampaignState(f"{campaign.mailbox.address} is switched off.")
    if not campaign.postal_address:
        raise CampaignInvalid("postal_address: bulk mail must show the sender's postal address; set it first.")
    now = timezone.now()
    first = campaign.steps.order_by("position").first()
    people = list(audience(campaign=campaign).values_list("pk", "email", "name"))
    blocked = suppressed(account_id=campaign.account_id, emails=[email for _, email, _ in people])
    seen: set[str] = set()
    rows = []
    for pk, email, name in people:
        key = email.lower()
        if key in blocked or key in seen:
            continue
        seen.add(key)
        rows.append(Enrollment(campaign=campaign, contact_id=pk, email=key, name=name, enrolled_at=now))
    Enrollment.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    enrolled = list(campaign.enrollments.all())
    StepDelivery.objects.bulk_create(
        [StepDelivery(enrollment=e, step=first, due_at=e.enrolled_at + timedelta(hours=first.delay_hours))
         for e in enrolled], ignore_conflicts=True, batch_size=500)
    campaign.status = Campaign.Status.SENDING if enrolled else Campaign.Status.COMPLETED
    campaign.started_at = now
    campaign.finished_at = None if enrolled else now
    campaign.save(update_fields=["status", "started_at", "finished_at"])
    return len(enrolled)


@transaction.atomic
def campaign_pause(*, campaign: Campaign) -> Campaign:
    """Stop new deliveries at once (a delivery already being written finishes)."""
    updated = Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.SENDING).update(
        status=Campaign.Status.PAUSED, paused_at=timezone.now())
    if not updated:
        raise CampaignState("Only a sending campaign can be paused.")
    campaign.refresh_from_db()
    return campaign


@transaction.atomic
def campaign_resume(*, campaign: Campaign) -> Campaign:
    """Carry on where it stopped: deliveries that fell due while paused go out now, in order."""
    updated = Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.PAUSED).update(
        status=Campaign.Status.SENDING, paused_at=None)
    if not updated:
        raise CampaignState("Only a paused campaign can be resumed.")
    campaign.refresh_from_db()
    return campaign


@transaction.atomic
def campaign_cancel(*, campaign: Campaign) -> Campaign:
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status in (Campaign.Status.COMPLETED, Campaign.Status.CANCELLED):
        raise CampaignState(f"The campaign is {campaign.status} already.")
    StepDelivery.objects.filter(enrollment__campaign=campaign, status=StepDelivery.Status.PENDING).update(
        status=StepDelivery.Status.SKIPPED, last_error="cancelled")
    campaign.status, campaign.finished_at = Campaign.Status.CANCELLED, timezone.now()
    campaign.save(update_fields=["status", "finished_at"])
    return campaign
