"""/v1/hosting/mailboxes/{id}/campaigns: campaigns, steps, send/pause/resume/cancel with the engine
running between calls, stats per step and variant, the plan gate, the scopes and the stranger rule."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from api.tests.test_hosting_contacts import ALL, key_client, open_mailbox
from campaigns.engine import campaigns_run_due
from campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery
from contacts.services import client_address_book, contact_create
from mailcore.mailboxes.aliases import alias_create
from mailcore.outbound.models import OutboundMessage

pytestmark = pytest.mark.django_db

POSTAL = "1 Market Street, Springfield"


@pytest.fixture(autouse=True)
def embedded(settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path


@pytest.fixture
def box(alice):
    return open_mailbox(alice, "acme.test", "ann")


@pytest.fixture
def book(box):
    """Six contacts: four bakers in the group "Bakers", two others."""
    book = client_address_book(client=box.mailbox.domain.client)
    for n in range(6):
        contact_create(book=book, name=f"Person {n}", email=f"p{n}@people.test", company="Bakery" if n < 4 else "Corp",
                       groups=["Bakers"] if n < 4 else [])
    return book


@pytest.fixture
def hosting(alice, box):
    return key_client(alice, ALL)


def url(box, tail: str = "") -> str:
    return f"/v1/hosting/mailboxes/{box.pk}/campaigns{tail}"


def create(hosting, box, **fields) -> dict:
    payload = {"from_email": "ann@acme.test", "name": "Welcome", "subject": "Hello {{first_name}}",
               "body_html": "<p>Hi {{name}}</p>", "postal_address": POSTAL, **fields}
    response = hosting.post(url(box), payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def act(hosting, box, campaign: dict, action: str, status: int = 200) -> dict:
    response = hosting.post(url(box, f"/{campaign['id']}/{action}"))
    assert response.status_code == status, response.json()
    return response.json()


def state(campaign: dict) -> tuple:
    row = Campaign.objects.get(pk=campaign["id"])
    return row.name, row.status, row.group_id, row.segment_filter, list(
        row.steps.order_by("position").values_list("subject", "body_html", "delay_hours"))


def sent_to(address: str) -> list[str]:
    return [m.payload["subject"] for m in OutboundMessage.objects.filter(payload__to=[address]).order_by("pk")]


# campaigns


def test_a_new_campaign_is_a_draft_with_one_step(hosting, box, book):
    bakers = book.groups.get(name="Bakers")
    created = create(hosting, box, from_email="Ann@Acme.test", group_id=bakers.pk,
                     segment_filter=[{"field": "email", "op": "ends_with", "value": "people.test"}])
    campaign = Campaign.objects.get()
    assert created == {
        "id": campaign.pk, "name": "Welcome", "from_email": "ann@acme.test", "subject": "Hello {{first_name}}",
        "body_html": "<p>Hi {{name}}</p>", "group_id": bakers.pk,
        "segment_filter": [{"field": "email", "op": "ends_with", "value": "people.test"}], "postal_address": POSTAL,
        "status": "draft", "created_at": created["created_at"], "started_at": None, "paused_at": None,
        "finished_at": None, "steps_count": 1, "enrolled": 0}
    assert campaign.book == book and campaign.mailbox == box.mailbox
    assert hosting.get(url(box, f"/{campaign.pk}")).json() == created
    assert hosting.get(url(box)).json() == {"campaigns": [created], "total": 1, "page": 1, "page_size": 20}
    assert hosting.get(url(box), {"status": "sending"}).json()["campaigns"] == []


def test_from_email_may_be_an_alias_of_the_mailbox_but_nothing_else(hosting, box, book):
    alias_create(mailbox=box.mailbox, alias_address="news@acme.test")
    assert create(hosting, box, from_email="news@acme.test")["from_email"] == "news@acme.test"
    response = hosting.post(url(box), {"from_email": "boss@acme.test", "name": "X", "subject": "S",
                                       "body_html": "<p>B</p>"}, format="json")
    assert response.status_code == 422
    assert "this mailbox's address (ann@acme.test)" in response.json()["errors"]["from_email"][0]
    assert Campaign.objects.count() == 1


@pytest.mark.parametrize("change, field", [
    ({"from_email": None}, "from_email"),
    ({"name": None}, "name"),
    ({"subject": None}, "subject"),
    ({"body_html": None}, "body_html"),
    ({"subject": "Two\r\nBcc: x@evil.test"}, "subject"),
    ({"name": "x" * 201}, "name"),
    ({"group_id": 999999}, "group_id"),
    ({"segment_filter": {"field": "name"}}, "segment_filter"),
    ({"segment_filter": [{"field": "password", "op": "equals", "value": "x"}]}, "segment_filter"),
    ({"segment_filter": [{"in_group": 999999}]}, "segment_filter"),
    ({"status": "sending"}, "status"),
])
def test_a_bad_campaign_is_a_422_on_its_field_and_nothing_is_stored(hosting, box, book, change, field):
    payload = {"from_email": "ann@acme.test", "name": "Welcome", "subject": "Hi", "body_html": "<p>Hi</p>", **change}
    payload = {key: value for key, value in payload.items() if value is not None}
    response = hosting.post(url(box), payload, format="json")
    assert response.status_code == 422, response.json()
    assert field in response.json()["errors"]
    assert not Campaign.objects.exists() and not CampaignStep.objects.exists()


def test_a_segment_error_says_what_is_wrong(hosting, box, book):
    response = hosting.post(url(box), {"from_email": "ann@acme.test", "name": "W", "subject": "S", "body_html": "B",
                                       "segment_filter": [{"field": "password", "op": "equals", "value": "x"}]},
                            format="json")
    assert response.json()["errors"]["segment_filter"] == ["Unknown field or operator: 'password' 'equals'."]


def test_a_draft_changes_and_a_sent_campaign_is_a_409(hosting, box, book):
    created = create(hosting, box)
    response = hosting.patch(url(box, f"/{created['id']}"), {"name": "Spring", "subject": "New", "group_id": None},
                             format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["name"], response.json()["subject"]) == ("Spring", "New")
    act(hosting, box, created, "send")
    before = state(created)
    response = hosting.patch(url(box, f"/{created['id']}"), {"name": "Later"}, format="json")
    assert response.status_code == 409
    assert "only drafts" in response.json()["detail"]
    assert state(created) == before


def test_delete_is_a_409_while_sending_and_works_once_paused(hosting, box, book):
    created = create(hosting, box)
    act(hosting, box, created, "send")
    assert hosting.delete(url(box, f"/{created['id']}")).status_code == 409
    assert Campaign.objects.filter(pk=created["id"]).exists()
    act(hosting, box, created, "pause")
    assert hosting.delete(url(box, f"/{created['id']}")).status_code == 204
    assert not Campaign.objects.exists() and not Enrollment.objects.exists()


# steps


def test_steps_are_listed_added_changed_and_deleted(hosting, box, book):
    created = create(hosting, box)
    steps_url = url(box, f"/{created['id']}/steps")
    added = hosting.post(steps_url, {"subject": "Day two", "body_html": "<p>2</p>"}, format="json")
    assert added.status_code == 201, added.json()
    step = added.json()
    assert {k: step[k] for k in ("position", "delay_hours", "subject", "subject_b", "ab_split_percent",
                                 "body_html")} == {"position": 2, "delay_hours": 0, "subject": "Day two",
                                                   "subject_b": "", "ab_split_percent": 50, "body_html": "<p>2</p>"}
    changed = hosting.patch(f"{steps_url}/{step['id']}", {"delay_hours": 24, "subject_b": "Day 2!",
                                                          "ab_split_percent": 30}, format="json")
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["delay_hours"], changed.json()["subject_b"], changed.json()["ab_split_percent"]) == (
        24, "Day 2!", 30)
    listed = hosting.get(steps_url).json()
    assert [(s["position"], s["subject"]) for s in listed] == [(1, "Hello {{first_name}}"), (2, "Day two")]
    assert hosting.get(url(box, f"/{created['id']}")).json()["steps_count"] == 2
    first = listed[0]["id"]
    assert hosting.delete(f"{steps_url}/{first}").status_code == 204
    assert [(s["position"], s["subject"]) for s in hosting.get(steps_url).json()] == [(1, "Day two")]
    only = hosting.delete(f"{steps_url}/{step['id']}")
    assert only.status_code == 409
    assert "at least one step" in only.json()["detail"]


@pytest.mark.parametrize("payload, field", [
    ({"body_html": "<p>x</p>"}, "subject"),
    ({"subject": "S"}, "body_html"),
    ({"subject": "S", "body_html": "B", "delay_hours": -1}, "delay_hours"),
    ({"subject": "S", "body_html": "B", "delay_hours": 8761}, "delay_hours"),
    ({"subject": "S", "body_html": "B", "ab_split_percent": 101}, "ab_split_percent"),
    ({"subject": "S", "body_html": "B", "ab_split_percent": "50"}, "ab_split_percent"),
    ({"subject": "S", "body_html": "B", "position": 1}, "position"),
])
def test_a_bad_step_is_a_422_and_nothing_is_added(hosting, box, book, payload, field):
    created = create(hosting, box)
    response = hosting.post(url(box, f"/{created['id']}/steps"), payload, format="json")
    assert response.status_code == 422
    assert field in response.json()["errors"]
    assert CampaignStep.objects.count() == 1


def test_a_step_that_went_out_cannot_change_or_go(hosting, box, book):
    created = create(hosting, box)
    act(hosting, box, created, "send")
    assert campaigns_run_due() == 6
    [first] = hosting.get(url(box, f"/{created['id']}/steps")).json()
    step_url = url(box, f"/{created['id']}/steps/{first['id']}")
    response = hosting.patch(step_url, {"subject": "Too late"}, format="json")
    assert response.status_code == 409
    assert "gone out" in response.json()["detail"]
    assert CampaignStep.objects.get().subject == "Hello {{first_name}}"


# life cycle with the engine


def test_send_pause_resume_with_the_engine_between_calls(hosting, box, book):
    created = create(hosting, box, group_id=book.groups.get(name="Bakers").pk)
    hosting.post(url(box, f"/{created['id']}/steps"), {"subject": "Day two", "body_html": "<p>2</p>",
                                                       "delay_hours": 24}, format="json")
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        sent = act(hosting, box, created, "send")
        assert (sent["status"], sent["enrolled"]) == ("sending", 4)
        assert campaigns_run_due() == 4
        paused = act(hosting, box, created, "pause")
        assert paused["status"] == "paused"
        clock.move_to(start + timedelta(hours=25))
        assert campaigns_run_due() == 0
        assert act(hosting, box, created, "pause", 409)["detail"] == "Only a sending campaign can be paused."
        assert act(hosting, box, created, "resume")["status"] == "sending"
        assert campaigns_run_due() == 4
        assert campaigns_run_due() == 0
    assert sent_to("p1@people.test") == ["Hello Person", "Day two"]
    assert sent_to("p5@people.test") == []
    final = hosting.get(url(box, f"/{created['id']}")).json()
    assert final["status"] == "completed" and final["finished_at"] is not None
    assert act(hosting, box, created, "resume", 409)["detail"] == "Only a paused campaign can be resumed."
    assert act(hosting, box, created, "cancel", 409)["detail"] == "The campaign is completed already."


def test_the_segment_filter_narrows_the_audience(hosting, box, book):
    created = create(hosting, box, segment_filter=[{"any": [{"field": "company", "op": "equals", "value": "corp"},
                                                            {"field": "name", "op": "ends_with", "value": " 0"}]}])
    assert act(hosting, box, created, "send")["enrolled"] == 3
    assert sorted(Enrollment.objects.values_list("email", flat=True)) == [
        "p0@people.test", "p4@people.test", "p5@people.test"]


def test_send_needs_a_postal_address_and_a_draft(hosting, box, book):
    created = create(hosting, box, postal_address="")
    response = hosting.post(url(box, f"/{created['id']}/send"))
    assert response.status_code == 422
    assert "postal address" in response.json()["errors"]["postal_address"][0]
    assert Campaign.objects.get().status == "draft" and not Enrollment.objects.exists()
    hosting.patch(url(box, f"/{created['id']}"), {"postal_address": POSTAL}, format="json")
    act(hosting, box, created, "send")
    assert "only a draft can be sent" in act(hosting, box, created, "send", 409)["detail"]
    assert Enrollment.objects.count() == 6


def test_cancel_drops_pending_deliveries(hosting, box, book):
    created = create(hosting, box)
    act(hosting, box, created, "send")
    cancelled = act(hosting, box, created, "cancel")
    assert cancelled["status"] == "cancelled"
    assert campaigns_run_due() == 0
    assert set(StepDelivery.objects.values_list("status", flat=True)) == {"skipped"}
    response = hosting.post(url(box, f"/{created['id']}/steps"), {"subject": "S", "body_html": "B"}, format="json")
    assert response.status_code == 409


# stats


def test_stats_count_per_step_and_variant(hosting, box, book):
    created = create(hosting, box)
    [first] = hosting.get(url(box, f"/{created['id']}/steps")).json()
    hosting.patch(url(box, f"/{created['id']}/steps/{first['id']}"), {"subject_b": "Hey there"}, format="json")
    hosting.post(url(box, f"/{created['id']}/steps"), {"subject": "Day two", "body_html": "<p>2</p>",
                                                       "delay_hours": 24}, format="json")
    act(hosting, box, created, "send")
    assert campaigns_run_due() == 6
    sent = StepDelivery.objects.filter(status="sent")
    now = timezone.now()
    sent.update(delivered_at=now)
    opened = list(sent.order_by("pk")[:3])
    StepDelivery.objects.filter(pk__in=[d.pk for d in opened]).update(opened_at=now)
    StepDelivery.objects.filter(pk=opened[0].pk).update(clicked_at=now, unsubscribed_at=now)
    variants = {v: sent.filter(variant=v).count() for v in ("a", "b")}
    opened_by = {v: sum(d.variant == v for d in opened) for v in ("a", "b")}

    response = hosting.get(url(box, f"/{created['id']}/stats"))
    assert response.status_code == 200
    stats = response.json()
    assert (stats["campaign_id"], stats["status"], stats["opened_approximate"]) == (created["id"], "sending", True)
    assert stats["totals"] == {"enrolled": 6, "active": 6, "completed": 0, "stopped": 0, "pending": 6, "sent": 6,
                               "skipped": 0, "failed": 0, "delivered": 6, "bounced": 0, "opened": 3, "clicked": 1,
                               "unsubscribed": 1, "complained": 0}
    one, two = stats["steps"]
    assert (one["position"], one["enrolled"], one["sent"], one["pending"], one["opened"]) == (1, 6, 6, 0, 3)
    assert one["variants"]["a"] == {"subject": "Hello {{first_name}}", "sent": variants["a"],
                                    "delivered": variants["a"], "bounced": 0, "opened": opened_by["a"],
                                    "clicked": int(opened[0].variant == "a"),
                                    "unsubscribed": int(opened[0].variant == "a"), "complained": 0}
    assert one["variants"]["b"]["subject"] == "Hey there"
    assert one["variants"]["b"]["sent"] == variants["b"]
    assert (two["position"], two["subject"], two["enrolled"], two["pending"], two["sent"]) == (2, "Day two", 6, 6, 0)
    assert list(two["variants"]) == ["a"]


def test_stats_take_a_constant_number_of_queries(hosting, box, book, django_assert_max_num_queries):
    from campaigns.stats import campaign_stats

    created = create(hosting, box)
    act(hosting, box, created, "send")
    campaigns_run_due()
    campaign = Campaign.objects.get()
    with django_assert_max_num_queries(3):
        campaign_stats(campaign)


# plan gate, scopes, strangers


def test_a_mailbox_whose_plan_lacks_campaigns_gets_a_403_naming_the_plan(alice, hosting, book):
    pro = open_mailbox(alice, "acme.test", "sales", plan_id="pro")
    responses = [hosting.get(url(pro)),
                 hosting.post(url(pro), {"from_email": "sales@acme.test", "name": "W", "subject": "S",
                                         "body_html": "B"}, format="json")]
    for response in responses:
        assert response.status_code == 403
        assert "Campaigns needs the Premium plan" in response.json()["detail"]
        assert "This mailbox is on the Pro plan." in response.json()["detail"]
    assert not Campaign.objects.exists()


def test_reading_needs_the_read_scope_and_changing_the_write_scope(alice, hosting, box, book):
    created = create(hosting, box)
    reader = key_client(alice, ["partner:mailboxes:read"])
    assert reader.get(url(box)).status_code == 200
    assert reader.get(url(box, f"/{created['id']}/stats")).status_code == 200
    assert reader.get(url(box, f"/{created['id']}/steps")).status_code == 200
    assert reader.post(url(box, f"/{created['id']}/send")).status_code == 403
    assert reader.patch(url(box, f"/{created['id']}"), {"name": "X"}, format="json").status_code == 403
    assert reader.delete(url(box, f"/{created['id']}")).status_code == 403
    assert key_client(alice, ["partner:mailboxes:write"]).get(url(box)).status_code == 403
    assert Campaign.objects.get().status == "draft" and Campaign.objects.get().name == "Welcome"


def test_another_partners_campaigns_are_404_and_untouched(hosting, box, book, charlie):
    created = create(hosting, box)
    step = hosting.get(url(box, f"/{created['id']}/steps")).json()[0]
    carl = open_mailbox(charlie, "charlie.test", "carl")
    stranger = key_client(charlie, ALL)
    before = state(created)
    for target in (box, carl):
        base = url(target, f"/{created['id']}")
        assert stranger.get(base).status_code == 404
        assert stranger.patch(base, {"name": "X"}, format="json").status_code == 404
        assert stranger.delete(base).status_code == 404
        assert stranger.get(f"{base}/steps").status_code == 404
        assert stranger.post(f"{base}/steps", {"subject": "S", "body_html": "B"}, format="json").status_code == 404
        assert stranger.patch(f"{base}/steps/{step['id']}", {"subject": "X"}, format="json").status_code == 404
        assert stranger.delete(f"{base}/steps/{step['id']}").status_code == 404
        for action in ("send", "pause", "resume", "cancel"):
            assert stranger.post(f"{base}/{action}").status_code == 404
        assert stranger.get(f"{base}/stats").status_code == 404
    assert stranger.get(url(box)).status_code == 404
    assert state(created) == before
    assert not Enrollment.objects.exists()


def test_another_mailbox_of_the_same_partner_does_not_see_the_campaign(alice, hosting, box, book):
    created = create(hosting, box)
    sibling = open_mailbox(alice, "acme.test", "sales")
    assert hosting.get(url(sibling, f"/{created['id']}")).status_code == 404
    assert hosting.get(url(sibling)).json()["campaigns"] == []
