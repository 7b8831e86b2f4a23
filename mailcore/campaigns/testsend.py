"""A test send: one step of a campaign to one address, as a contact would get it (personalised and
decorated by the engine's own functions), marked "[Test]" in the subject. It enrols nobody, writes no
delivery row and so changes no stats; it goes through mail_send like any other mail (quota, DKIM,
Sent copy, events)."""
from django.utils import timezone

from mailcore.campaigns import deliverability
from mailcore.campaigns.engine import personalise
from mailcore.campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from mailcore.contacts.models import Contact
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send

TEST_MARK = "[Test] "


def campaign_step_request(*, campaign: Campaign, step: CampaignStep, to: str, variant: str = "a",
                          subject_prefix: str = "") -> SendRequest:
    """The send request a contact at `to` would get for `step` (the test send, and the portal's preview):
    the name filled in is that of the book's contact with this address, if any."""
    if step.campaign_id != campaign.pk:
        raise ValueError("step of another campaign")
    to = to.strip().lower()
    contact = Contact.objects.filter(book_id=campaign.book_id, email__iexact=to).order_by("pk").first()
    # Unsaved rows: the engine's functions read them like real ones, and nothing is written.
    enrollment = Enrollment(campaign=campaign, contact=contact, email=to, name=contact.name if contact else "",
                            enrolled_at=timezone.now())
    # pk 0 (no such row): the footer's unsubscribe link still works (it suppresses the address for
    # the account, as any unsubscribe does) but marks no delivery, so the stats don't change.
    delivery = StepDelivery(pk=0, enrollment=enrollment, step=step, due_at=enrollment.enrolled_at,
                            variant="b" if variant == "b" and step.subject_b else "a")
    subject = step.subject_b if delivery.variant == "b" else step.subject
    return deliverability.decorate(delivery, SendRequest(
        from_email=campaign.from_email, to=[to],
        subject=subject_prefix + personalise(subject, enrollment, as_html=False),
        body_html=personalise(step.body_html, enrollment)))


def campaign_test_send(*, campaign: Campaign, step: CampaignStep, to: str, variant: str = "a") -> OutboundMessage:
    """Send `step` (subject A, or B with variant="b" when the step has one) to `to`, marked [Test].
    Raises what mail_send raises (ValidationError, quota, a locked mailbox)."""
    request = campaign_step_request(campaign=campaign, step=step, to=to, variant=variant, subject_prefix=TEST_MARK)
    return mail_send(account=campaign.account, user=None, request=request)
