"""The public unsubscribe page of campaign mail, as a reader and a mail provider use it: the link in
List-Unsubscribe shows a confirmation page and changes nothing on GET; the page's button (a form
with CSRF) and a provider's one-click POST (RFC 8058, no CSRF token) unsubscribe, once; later steps
are skipped; an altered link is 404 and changes nothing."""
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from campaigns.engine import campaigns_run_due
from campaigns.models import Enrollment, StepDelivery, Suppression
from campaigns.services import campaign_create, campaign_delete, campaign_pause, campaign_send, step_add
from contacts.services import address_book_for, contact_create
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

ONE_CLICK = {"List-Unsubscribe": "One-Click"}


@pytest.fixture
def campaign(alice):
    news = make_mailbox(alice.account, "news@example.test")
    book = address_book_for(account=alice.account)
    contact_create(book=book, name="Bob Jones", email="bob@people.test")
    contact_create(book=book, name="Carol King", email="carol@people.test")
    campaign = campaign_create(mailbox=news, book=book, from_email=news.address, name="Welcome", subject="Hi",
                               body_html="<p>Hi</p>", postal_address="1 Market Street, Springfield")
    step_add(campaign=campaign, delay_hours=24, subject="Day two", body_html="<p>Two</p>")
    campaign_send(campaign=campaign)
    assert campaigns_run_due() == 2
    return campaign


def link(address: str) -> str:
    """The path of the List-Unsubscribe URL that went out to this address."""
    delivery = StepDelivery.objects.get(enrollment__email=address, step__position=1)
    header = dict(delivery.outbound.payload["headers"])["List-Unsubscribe"]
    return header.strip("<>").removeprefix("http://127.0.0.1:8000")


def state() -> tuple:
    return (list(Suppression.objects.values_list("email", "reason")),
            sorted(Enrollment.objects.values_list("email", "status")),
            list(StepDelivery.objects.filter(unsubscribed_at__isnull=False).values_list("pk", flat=True)))


def test_opening_the_link_shows_the_address_and_sender_and_changes_nothing(campaign):
    before = state()
    response = Client().get(link("bob@people.test"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Unsubscribe from these emails?" in page
    assert "bob@people.test" in page and "news@example.test" in page
    assert '<form method="post">' in page and "csrfmiddlewaretoken" in page
    assert response["Cache-Control"].startswith("max-age=0")
    assert state() == before


def test_a_one_click_post_unsubscribes_without_csrf_and_later_steps_are_skipped(campaign):
    provider = Client(enforce_csrf_checks=True)
    response = provider.post(link("bob@people.test"), ONE_CLICK)
    assert response.status_code == 200 and response.content == b"Unsubscribed.\n"

    bob = StepDelivery.objects.get(enrollment__email="bob@people.test", step__position=1)
    assert bob.unsubscribed_at is not None
    assert list(Suppression.objects.values_list("account", "email", "reason", "campaign")) == [
        (campaign.account_id, "bob@people.test", "unsubscribed", campaign.pk)]
    assert Enrollment.objects.get(email="bob@people.test").stop_reason == "unsubscribed"
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        assert campaigns_run_due() == 1
    assert list(StepDelivery.objects.filter(step__position=2).order_by("enrollment__email")
                .values_list("enrollment__email", "status")) == [("bob@people.test", "skipped"),
                                                                 ("carol@people.test", "sent")]


def test_unsubscribing_again_changes_nothing(campaign):
    path = link("bob@people.test")
    Client().post(path, ONE_CLICK)
    first = state()
    stamp = StepDelivery.objects.get(unsubscribed_at__isnull=False).unsubscribed_at
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        assert Client().post(path, ONE_CLICK).status_code == 200
    assert state() == first
    assert StepDelivery.objects.get(unsubscribed_at__isnull=False).unsubscribed_at == stamp
    assert "You are unsubscribed" in Client().get(path).content.decode()


def test_the_pages_button_unsubscribes_with_its_csrf_token_and_not_without(campaign):
    reader = Client(enforce_csrf_checks=True)
    path = link("carol@people.test")
    page = reader.get(path)
    token = page.context["csrf_token"]
    before = state()
    assert reader.post(path, {}).status_code == 403
    assert state() == before

    response = reader.post(path, {"csrfmiddlewaretoken": str(token)})
    assert response.status_code == 200
    assert "You are unsubscribed" in response.content.decode()
    assert list(Suppression.objects.values_list("email", flat=True)) == ["carol@people.test"]


@pytest.mark.parametrize("mangle", [
    lambda path: path[:-1] + ("A" if path[-1] != "A" else "B"),  # the signature altered
    lambda path: path.replace("/u/", "/u/x"),  # the payload altered
    lambda path: path[:-10],  # cut short
    lambda path: "/u/not-a-token",
])
def test_an_altered_link_is_404_and_changes_nothing(campaign, mangle):
    path = mangle(link("bob@people.test"))
    before = state()
    page = Client().get(path, HTTP_ACCEPT="text/html")
    assert page.status_code == 404 and "This unsubscribe link is not valid" in page.content.decode()
    assert Client().post(path, ONE_CLICK).status_code == 404
    assert Client().post(path, {}, HTTP_ACCEPT="text/html").status_code == 404
    assert state() == before


def test_the_link_still_unsubscribes_after_the_campaign_is_deleted(campaign):
    path = link("bob@people.test")
    campaign_pause(campaign=campaign)
    campaign_delete(campaign=campaign)
    assert Client().post(path, ONE_CLICK).status_code == 200
    assert list(Suppression.objects.values_list("email", "reason", "campaign")) == [
        ("bob@people.test", "unsubscribed", None)]
