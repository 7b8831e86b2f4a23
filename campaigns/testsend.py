"""A test send: one step of a campaign to one address, as a contact would get it (personalised and
decorated by the engine's own functions), marked "[Test]" in the subject. It enrols nobody, writes no
delivery row and so changes no stats; it goes through mail_send like any other mail (quota, DKIM,
Sent copy, events)."""
from django.utils import timezone

from campaigns import deliverability
from campaigns.engine import personalise
from campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from campaigns.services import audience
from contacts.models import Contact
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send

TEST_MARK = "[Test] "


# Who a test or a preview is personalised for when the audience has nobody yet.
BUILT_IN_SAMPLE = Contact(name="Alex Sample", email="alex.sample@example.com")


def campaign_sample_contact(*, campaign: Campaign) -> Contact:
    """The contact tests and previews are personalised for: the first of the audience (the target
    group's), else a built-in sample, so {{first_name}} never reads as a blank."""
    first = audience(campaign=campaign).order_by("name", "pk").first() if campaign.book_id else None
    return first or BUILT_IN_SAMPLE


def campaign_step_request(*, campaign: Campaign, step: CampaignStep, to: str, variant: str = "a",
                          subject_prefix: str = "") -> SendRequest:
    """The send request for `step` sent to `to` (the test send, and the portal's preview), personalised
    for the book's contact at that address, else for the sample contact; the footer is `to`'s own."""
    if step.campaign_id != campaign.pk:
        raise ValueError("step of another campaign")
    to = to.strip().lower()
    contact = Contact.objects.filter(book_id=campaign.book_id, email__iexact=to).order_by("pk").first()
    shown_as = contact or campaign_sample_contact(campaign=campaign)
    # Unsaved rows: the engine's functions read them like real ones, and nothing is written.
    enrollment = Enrollment(campaign=campaign, contact=contact, email=to, name=contact.name if contact else "",
                            enrolled_at=timezone.now())
    # The footer's unsubscribe link stays `to`'s own: clicking it in a test never unsubscribes the sample.
    personalised_for = Enrollment(campaign=campaign, email=shown_as.email, name=shown_as.name)
    # pk 0 (no such row): the footer's unsubscribe link still works (it suppresses the address for
    # the account, as any unsubscribe does) but marks no delivery, so the stats don't change.
    delivery = StepDelivery(pk=0, enrollment=enrollment, step=step, due_at=enrollment.enrolled_at,
                            variant="b" if variant == "b" and step.subject_b else "a")
    subject = step.subject_b if delivery.variant == "b" else step.subject
    return deliverability.decorate(delivery, SendRequest(
        from_email=campaign.from_email, to=[to],
        subject=subject_prefix + personalise(subject, personalised_for, as_html=False),
        body_html=personalise(step.body_html, personalised_for)))


def campaign_test_send(*, campaign: Campaign, step: CampaignStep, to: str, variant: str = "a") -> OutboundMessage:
    """Send `step` (subject A, or B with variant="b" when the step has one) to `to`, marked [Test].
    Raises what mail_send raises (InvalidFields, quota, a locked mailbox)."""
    request = campaign_step_request(campaign=campaign, step=step, to=to, variant=variant, subject_prefix=TEST_MARK)
    return mail_send(account=campaign.account, user=None, request=request)
