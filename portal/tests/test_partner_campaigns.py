"""The portal's pages for a client mailbox's campaigns: the list, create with inline errors (nothing saved),
edit while a draft, steps (add, edit, delete while allowed), send / pause / resume / cancel, stats per step and
variant, the sandboxed preview, the test send (no enrolment, no stats), the plan gate, strangers and CSRF."""
import html
import re

import pytest
from django.test import Client

from billing.services.mailboxes import partner_mailbox_open
from mailcore.accounts.models import Plan
from campaigns.engine import campaigns_run_due
from campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from campaigns.services import campaign_create, campaign_send, step_add, step_update
from contacts.services import client_address_book, contact_create, group_create
from mailcore.outbound.models import OutboundMessage
from mailcore.partners.models import PartnerClient
from mailcore.partners.services import hosting_partner_enable, slots_grant
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
ADDRESS = "1 Market Street, Springfield"


@pytest.fixture
def partner(alice):
    partner = hosting_partner_enable(account=alice.account, status="active")
    slots_grant(partner=partner, count=5)
    return partner


@pytest.fixture
def domain(partner):
    domain = make_domain(partner.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    return domain


@pytest.fixture
def partner_mailbox(partner, domain):
    return partner_mailbox_open(partner=partner, domain=domain, local_part="news", password="s3cret-pass",
                                plan_id="premium", display_name="Acme News")


@pytest.fixture
def book(domain):
    book = client_address_book(client=domain.client)
    group_create(book=book, name="Customers")
    for n in range(3):
        contact_create(book=book, name=f"Person {n}", email=f"p{n}@people.test", groups=["Customers"])
    contact_create(book=book, name="Outsider", email="out@people.test")
    return book


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def campaign(partner_mailbox, book):
    return campaign_create(mailbox=partner_mailbox.mailbox, book=book, from_email=partner_mailbox.mailbox.address,
                           name="Welcome", subject="Hello {{first_name}}", body_html="<p>Hi {{name}}</p>",
                           postal_address=ADDRESS)


@pytest.fixture
def stranger_campaign(db):
    user = UserFactory(email="dave@example.test", account__plan_code="premium")
    partner = hosting_partner_enable(account=user.account, status="active")
    slots_grant(partner=partner, count=1)
    domain = make_domain(user.account, "dave.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Dave's client")
    domain.save(update_fields=["client"])
    theirs = partner_mailbox_open(partner=partner, domain=domain, local_part="dave", password="s3cret-pass",
                                  plan_id="premium")
    campaign = campaign_create(mailbox=theirs.mailbox, book=client_address_book(client=domain.client),
                               from_email=theirs.mailbox.address, name="Theirs", subject="S", body_html="<p>x</p>")
    return theirs, campaign


def url(partner_mailbox, suffix="") -> str:
    return f"/portal/mailboxes/{partner_mailbox.pk}/campaigns/{suffix}"


def field_errors(page: str, field: str) -> str:
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', page, re.DOTALL)
    return html.unescape(found.group(1)) if found else ""


def form(partner_mailbox, **changes) -> dict:
    return {"name": "Spring sale", "from_email": partner_mailbox.mailbox.address, "subject": "Spring is here",
            "body_html": "<p>Hello {{first_name}}</p>", "group": "", "segment_filter": "",
            "postal_address": ADDRESS, **changes}


# list and create


def test_the_list_shows_each_campaign_with_its_status_and_sent_count(alice_client, partner_mailbox, campaign):
    campaign_send(campaign=campaign)
    campaigns_run_due()
    page = alice_client.get(url(partner_mailbox)).content.decode()
    row = re.search(r"<tr>\s*<td class=\"stack-cell--full\"><a[^>]*>Welcome</a>.*?</tr>", page, re.DOTALL).group(0)
    assert "Sending" in row or "Completed" in row
    assert re.search(r'data-label="Sent">4<', row)


def test_creating_a_campaign_makes_a_draft_with_its_first_step(alice_client, partner_mailbox, book):
    group = book.groups.get(name="Customers")
    response = alice_client.post(url(partner_mailbox, "new/"), form(partner_mailbox, group=str(group.pk)))
    created = Campaign.objects.get()
    assert response.status_code == 302 and response["Location"] == url(partner_mailbox, f"{created.pk}/")
    assert (created.status, created.group, created.book, created.from_email) == (
        "draft", group, book, "news@acme.test")
    assert list(created.steps.values_list("position", "subject")) == [(1, "Spring is here")]


def test_the_from_address_is_the_mailboxes_own(alice_client, partner_mailbox, book):
    page = alice_client.get(url(partner_mailbox, "new/")).content.decode()
    assert '<option value="news@acme.test" selected>news@acme.test</option>' in page
    response = alice_client.post(url(partner_mailbox, "new/"), form(partner_mailbox, from_email="ceo@acme.test"))
    assert response.status_code == 422
    assert "Select a valid choice." in field_errors(response.content.decode(), "from_email")
    assert Campaign.objects.count() == 0


def test_a_bad_segment_filter_comes_back_next_to_its_field_and_nothing_is_saved(alice_client, partner_mailbox, book):
    broken = alice_client.post(url(partner_mailbox, "new/"), form(partner_mailbox, segment_filter="[{"))
    assert "Not valid JSON" in field_errors(broken.content.decode(), "segment_filter")
    unknown = alice_client.post(url(partner_mailbox, "new/"),
                                form(partner_mailbox, segment_filter='[{"field": "salary", "op": "equals", "value": "1"}]'),
                                **HTMX)
    assert unknown.content.decode().startswith('<section id="campaign-form"')
    assert "Unknown field or operator: 'salary' 'equals'." in field_errors(unknown.content.decode(), "segment_filter")
    missing = alice_client.post(url(partner_mailbox, "new/"), form(partner_mailbox, subject="", body_html=""))
    assert missing.status_code == 422
    assert "This field is required." in field_errors(missing.content.decode(), "subject")
    assert Campaign.objects.count() == 0


def test_a_draft_can_be_edited_and_a_sent_campaign_cannot(alice_client, partner_mailbox, campaign):
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/edit/"),
                                 form(partner_mailbox, name="Welcome!", subject="Hi there"))
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.name == "Welcome!" and campaign.steps.get().subject == "Hi there"
    campaign_send(campaign=campaign)
    refused = alice_client.post(url(partner_mailbox, f"{campaign.pk}/edit/"), form(partner_mailbox, name="Later"),
                                follow=True)
    assert "can no longer be changed; only drafts can." in refused.content.decode()
    campaign.refresh_from_db()
    assert campaign.name == "Welcome!"


# steps


def test_steps_are_added_edited_and_deleted(alice_client, partner_mailbox, campaign):
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/steps/"),
                      {"delay_hours": "24", "subject": "Day two", "subject_b": "Day 2!", "ab_split_percent": "30",
                       "body_html": "<p>Two</p>"})
    second = campaign.steps.get(position=2)
    assert (second.delay_hours, second.subject_b, second.ab_split_percent) == (24, "Day 2!", 30)
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/steps/{second.pk}/"),
                      {"delay_hours": "48", "subject": "Day three", "subject_b": "", "ab_split_percent": "50",
                       "body_html": "<p>Three</p>"})
    second.refresh_from_db()
    assert (second.delay_hours, second.subject) == (48, "Day three")
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/steps/{second.pk}/delete/"))
    assert list(campaign.steps.values_list("position", flat=True)) == [1]


def test_a_bad_step_comes_back_with_its_errors_and_nothing_is_added(alice_client, partner_mailbox, campaign):
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/steps/"),
                                 {"delay_hours": "-1", "subject": "", "ab_split_percent": "101", "body_html": "x"})
    page = response.content.decode()
    assert response.status_code == 422
    assert "Ensure this value is greater than or equal to 0." in field_errors(page, "step_delay_hours")
    assert "Ensure this value is less than or equal to 100." in field_errors(page, "step_ab_split_percent")
    assert campaign.steps.count() == 1


def test_a_step_that_went_out_cannot_be_edited(alice_client, partner_mailbox, campaign):
    campaign_send(campaign=campaign)
    campaigns_run_due()
    step = campaign.steps.get()
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/steps/{step.pk}/"),
                                 {"delay_hours": "0", "subject": "Changed", "ab_split_percent": "50", "body_html": "x"})
    assert "has gone out to some contacts already" in html.unescape(response.content.decode())
    step.refresh_from_db()
    assert step.subject == "Hello {{first_name}}"
    detail = alice_client.get(url(partner_mailbox, f"{campaign.pk}/")).content.decode()
    assert f"/steps/{step.pk}/\"" not in detail and "Sent to some contacts" in detail


# actions


def test_send_pause_resume_and_cancel_change_the_state(alice_client, partner_mailbox, campaign):
    question = alice_client.get(url(partner_mailbox, f"{campaign.pk}/send/")).content.decode()
    assert "Send Welcome?" in question and "It goes to 4 contacts" in question
    campaign.refresh_from_db()
    assert campaign.status == "draft"
    sent = alice_client.post(url(partner_mailbox, f"{campaign.pk}/send/"), follow=True).content.decode()
    assert "Welcome is sending to 4 contacts." in sent
    assert Enrollment.objects.filter(campaign=campaign).count() == 4
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/pause/"))
    campaign.refresh_from_db()
    assert campaign.status == "paused"
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/resume/"), **HTMX)
    campaign.refresh_from_db()
    assert campaign.status == "sending"
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/cancel/"))
    campaign.refresh_from_db()
    assert campaign.status == "cancelled"
    assert not StepDelivery.objects.filter(status="pending").exists()


def test_an_action_the_state_does_not_allow_is_refused_with_the_reason(alice_client, partner_mailbox, campaign):
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/resume/"), follow=True)
    assert "Only a paused campaign can be resumed." in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == "draft"


def test_sending_without_a_postal_address_is_refused(alice_client, partner_mailbox, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(postal_address="")
    page = alice_client.get(url(partner_mailbox, f"{campaign.pk}/")).content.decode()
    assert "Add the sender&#x27;s postal address before sending." in page or \
        "Add the sender's postal address before sending." in page
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/send/"), follow=True)
    assert "Bulk mail must show the sender&#x27;s postal address; set it first." in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == "draft" and not Enrollment.objects.exists()


def test_a_draft_can_be_deleted(alice_client, partner_mailbox, campaign):
    assert "Delete Welcome?" in alice_client.get(url(partner_mailbox, f"{campaign.pk}/delete/")).content.decode()
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/delete/"))
    assert not Campaign.objects.exists()


# stats and preview


def test_the_stats_show_sent_counts_per_step_and_variant_with_a_table(alice_client, partner_mailbox, campaign):
    step = campaign.steps.get()
    step.subject_b = "Subject B"
    step.save()
    campaign_send(campaign=campaign)
    campaigns_run_due()
    page = alice_client.get(url(partner_mailbox, f"{campaign.pk}/")).content.decode()
    assert '<dd id="total-sent">4</dd>' in page
    table = re.search(r'<table class="table">.*?</table>', page, re.DOTALL).group(0)
    a = StepDelivery.objects.filter(variant="a").count()
    assert re.search(rf'<th scope="row">Sent</th><td class="num">4</td><td class="num">{a}</td><td class="num">{4 - a}</td>',
                     table)
    assert "Opened (approximate)" in table
    assert "Opens are approximate" in page
    assert page.count('class="campaign-bar"') == 7


def test_each_step_is_previewed_sanitized_in_a_sandboxed_frame(alice_client, partner_mailbox, campaign):
    step_add(campaign=campaign, subject="Two", body_html='<p onclick="x()">Two</p><script>alert(1)</script>'
                                                        '<img src="https://img.test/a.png">')
    response = alice_client.get(url(partner_mailbox, f"{campaign.pk}/"))
    page = response.content.decode()
    frames = re.findall(r"<iframe[^>]*>", page)
    assert len(frames) == 2
    for frame in frames:
        sandbox = re.search(r'\ssandbox="([^"]*)"', frame).group(1)
        assert "allow-scripts" not in sandbox and "allow-same-origin" not in sandbox
        srcdoc = html.unescape(re.search(r'\ssrcdoc="([^"]*)"', frame).group(1))
        assert "<script" not in srcdoc.lower() and "onclick" not in srcdoc
    first = html.unescape(frames[0])
    assert "Hi Outsider" in first  # personalised for the first contact of the audience (by name)
    assert "1 Market Street, Springfield" in first and "/u/" not in first  # the footer, its link inert
    assert "img-src 'self' data: https:" in response["Content-Security-Policy"]


# the test send


def test_a_test_send_sends_one_marked_message_and_enrols_nobody(alice_client, partner_mailbox, campaign):
    step = campaign.steps.get()
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/test/"),
                                 {"to": "p1@people.test", "step": str(step.pk)}, **HTMX)
    assert response.content.decode().startswith('<section id="campaign-test"')
    assert "Sent to p1@people.test" in response.content.decode()
    message = OutboundMessage.objects.get()
    assert message.payload["subject"] == "[Test] Hello Person"
    assert message.payload["to"] == ["p1@people.test"]
    assert "Hi Person 1" in message.payload["body_html"]  # personalised and decorated as the engine does
    assert ADDRESS in message.payload["body_html"]
    assert dict(map(tuple, message.payload["headers"]))["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert not Enrollment.objects.exists() and not StepDelivery.objects.exists()
    campaign.refresh_from_db()
    assert campaign.status == "draft"


def test_a_test_send_to_an_address_outside_the_book_is_personalised_for_the_groups_first_contact(
        alice_client, partner_mailbox, campaign, book):
    campaign.group = book.groups.get(name="Customers")
    campaign.save(update_fields=["group"])
    step = campaign.steps.get()
    step_update(step=step, subject="{{first_name}}, pre-order", body_html="<p>Dear {{ name | friend }}</p>")
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/test/"), {"to": "me@tester.test", "step": str(step.pk)})
    message = OutboundMessage.objects.get()
    assert message.payload["subject"] == "[Test] Person, pre-order"
    assert "Dear Person 0" in message.payload["body_html"]
    assert message.payload["to"] == ["me@tester.test"]


def test_a_contact_imported_without_a_name_gets_the_fallback_not_its_address(
        alice_client, partner_mailbox, campaign, book):
    book.contacts.all().delete()
    imported = alice_client.post(f"/portal/mailboxes/{partner_mailbox.pk}/contacts/import/",
                                 {"text": "email\nann@bakery.test\n"}, follow=True)
    assert imported.status_code == 200 and book.contacts.get().email == "ann@bakery.test"
    step = campaign.steps.get()
    step_update(step=step, subject="{{first_name}}, pre-order", body_html="<p>Hi {{first_name|there}}, {{ name }}.</p>")
    alice_client.post(url(partner_mailbox, f"{campaign.pk}/test/"), {"to": "me@tester.test", "step": str(step.pk)})
    message = OutboundMessage.objects.get()
    assert message.payload["subject"] == "[Test] , pre-order"
    assert "Hi there, ." in message.payload["body_html"]


def test_with_nobody_in_the_audience_tests_and_previews_use_the_built_in_sample_and_fallbacks(
        alice_client, partner_mailbox, campaign, book):
    book.contacts.all().delete()
    step = campaign.steps.get()
    step_update(step=step, subject="{{first_name}}, pre-order", body_html="<p>Hi {{first_name|there}}, {{email}}</p>")
    page = alice_client.get(url(partner_mailbox, f"{campaign.pk}/")).content.decode()
    assert "{{" not in html.unescape(re.search(r'\ssrcdoc="([^"]*)"', page).group(1))
    assert "Hi Alex, alex.sample@example.com" in html.unescape(page)
    assert "Alex, pre-order<span class=\"text-xs text-subtle campaign-step__template\"> Written as: {{first_name}}, " \
           "pre-order</span>" in page
    assert "As an example contact, Alex Sample, would get it (no contacts in this audience yet)" in page

    alice_client.post(url(partner_mailbox, f"{campaign.pk}/test/"), {"to": "me@tester.test", "step": str(step.pk)})
    message = OutboundMessage.objects.get()
    assert message.payload["subject"] == "[Test] Alex, pre-order"
    # the footer's unsubscribe link is the tester's own, never the sample's
    assert "alex.sample" not in re.search(r"/u/[^\"'<> ]*", message.payload["body_html"]).group(0)


def test_a_test_send_to_a_bad_address_shows_the_error_and_sends_nothing(alice_client, partner_mailbox, campaign):
    step = campaign.steps.get()
    response = alice_client.post(url(partner_mailbox, f"{campaign.pk}/test/"), {"to": "nope", "step": str(step.pk)})
    assert response.status_code == 422
    assert "Enter a valid email address." in field_errors(response.content.decode(), "test_to")
    assert not OutboundMessage.objects.exists()


# gates, strangers, CSRF


def test_a_plan_without_campaigns_gets_a_page_that_says_so(alice_client, partner_mailbox, book):
    partner_mailbox.mailbox.plan = Plan.objects.get(code="pro")
    partner_mailbox.mailbox.save(update_fields=["plan"])
    response = alice_client.get(url(partner_mailbox))
    assert response.status_code == 403
    assert "Campaigns needs the Premium plan; your plan does not include it." in response.content.decode()
    assert alice_client.post(url(partner_mailbox, "new/"), form(partner_mailbox)).status_code == 403
    assert not Campaign.objects.exists()


def test_another_partners_mailbox_and_campaign_are_404(alice_client, partner_mailbox, campaign, stranger_campaign):
    theirs, their_campaign = stranger_campaign
    for path in ("", "new/", f"{their_campaign.pk}/"):
        assert alice_client.get(url(theirs, path)).status_code == 404
    step = their_campaign.steps.get()
    for path in (f"{their_campaign.pk}/", f"{their_campaign.pk}/edit/", f"{their_campaign.pk}/steps/{step.pk}/"):
        assert alice_client.get(url(partner_mailbox, path)).status_code == 404
    for path in ("send/", "cancel/", "delete/", "test/", "steps/"):
        assert alice_client.post(url(partner_mailbox, f"{their_campaign.pk}/{path}"),
                                 {"to": "x@y.test", "step": step.pk}).status_code == 404
    assert alice_client.get(url(partner_mailbox, f"{campaign.pk}/steps/{step.pk}/")).status_code == 404
    their_campaign.refresh_from_db()
    assert their_campaign.status == "draft" and not OutboundMessage.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(alice, partner_mailbox, campaign):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    step = campaign.steps.get()
    assert strict.post(url(partner_mailbox, f"{campaign.pk}/send/")).status_code == 403
    assert strict.post(url(partner_mailbox, f"{campaign.pk}/test/"), {"to": "a@b.test", "step": step.pk}).status_code == 403
    assert strict.post(url(partner_mailbox, "new/"), form(partner_mailbox)).status_code == 403
    campaign.refresh_from_db()
    assert campaign.status == "draft" and Campaign.objects.count() == 1 and not OutboundMessage.objects.exists()
    assert CampaignStep.objects.count() == 1
