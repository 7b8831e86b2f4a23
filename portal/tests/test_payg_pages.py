"""The portal's pay-as-you-go pages: retail prices, creating a pay-as-you-go mailbox, its checkout link
(copy and email), its subscription after the customer pays (cancel, change plan), earnings and payout
requests, the public thank-you page, and the console's payout actions.

The payment provider is the local one (the default in tests): its signed events are delivered on
commit, so the tests run those callbacks with django_capture_on_commit_callbacks(execute=True).
alice owns the partner account, bob is her teammate, charlie a partner of his own who gets 404."""
import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from billing.models import LedgerEntry, Payment, Payout, Purchase, RetailPrice
from billing.providers.local import LocalProvider
from billing.services.ledger import balances, payout_request
from billing.services.partners import partner_approve
from billing.services.payg import retail_price_set
from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from portal.tests.test_operator_console import HTML, sign_in
from testkit.clients import login_client
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db

PRICING = "/portal/billing/retail-pricing/"
EARNINGS = "/portal/billing/earnings/"
NEW = "/portal/mailboxes/new/"
THANKS = "/billing/thanks/"
HTMX = {"HTTP_HX_REQUEST": "true"}


def a_partner(account, domain_name: str):
    """An approved partner (on trial, billed in USD) with a verified domain belonging to a client."""
    partner = partner_approve(partner=hosting_partner_enable(account=account, status="pending"))
    domain = make_domain(account, domain_name)
    domain.client = PartnerClient.objects.create(partner=partner, name=f"Client of {domain_name}")
    domain.save(update_fields=["client"])
    return partner


@pytest.fixture
def partner(alice):
    return a_partner(alice.account, "acme.test")


@pytest.fixture
def portal(alice, partner):
    return login_client(alice)


@pytest.fixture
def priced(partner):
    """alice sells Pro mailboxes at $7.50 a month (wholesale $2.00: a $5.50 margin)."""
    return retail_price_set(partner=partner, plan_type="pro", currency="usd", retail_price="7.50")


def create(portal, *, plan="pro", funding="pay_as_you_go", local_part="ann", **headers):
    return portal.post(NEW, {"domain": Domain.objects.get(name="acme.test").pk, "local_part": local_part,
                             "password": "long enough 1", "plan_id": plan, "display_name": "",
                             "funding_mode": funding}, **headers)


@pytest.fixture
def pending(portal, priced):
    """ann@acme.test, created pay-as-you-go from the page and waiting for the customer's payment."""
    created = create(portal)
    assert created.status_code == 302
    portal.get(created["Location"])  # the page that shows (and so clears) the "created" message
    return PartnerMailbox.objects.get(mailbox__address="ann@acme.test")


def pay(partner_mailbox, django_capture_on_commit_callbacks):
    """The customer pays at the local checkout; the provider's event is delivered."""
    token = partner_mailbox.purchases.get(kind=Purchase.Kind.MAILBOX).provider_ref
    with django_capture_on_commit_callbacks(execute=True):
        LocalProvider().checkout_complete(token, paid=True)
    partner_mailbox.refresh_from_db()
    return partner_mailbox


@pytest.fixture
def paid(pending, django_capture_on_commit_callbacks):
    return pay(pending, django_capture_on_commit_callbacks)


def page_of(portal, partner_mailbox) -> str:
    return portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/").content.decode()


def url(partner_mailbox, action: str) -> str:
    return f"/portal/mailboxes/{partner_mailbox.pk}/{action}/"


def texts(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# retail prices


def test_the_pricing_page_lists_every_plan_in_the_partners_currency_only(portal):
    page = portal.get(PRICING).content.decode()

    for wholesale in ("$2.00", "$5.00"):
        assert wholesale in page
    assert "₦" not in page and "NGN" not in page
    assert page.count("not set") == 2
    assert '<input type="hidden" name="currency" value="usd"' in page
    assert "In USD, your billing currency: your customers pay in it." in page


def test_a_price_in_another_currency_is_refused_and_nothing_is_saved(portal, partner):
    response = portal.post(PRICING, {"plan_type": "pro", "currency": "ngn", "retail_price": "9000"})

    assert response.status_code == 422
    assert "Select a valid choice" in str(response.context["form"].errors["currency"])
    assert not RetailPrice.objects.exists()


def test_setting_a_retail_price_shows_it_with_its_margin(portal, partner):
    response = portal.post(PRICING, {"plan_type": "pro", "currency": "usd", "retail_price": "7.50"}, follow=True)

    row = RetailPrice.objects.get(partner=partner)
    assert (row.plan_type, row.currency, row.amount_minor) == ("pro", "usd", 750)
    assert texts(response) == ["Pro mailboxes now cost your customers $7.50 a month; you keep $5.50 of each payment."]
    page = response.content.decode()
    assert "<strong>$7.50</strong>" in page and "$5.50" in page and page.count("not set") == 1


def test_a_price_below_wholesale_is_refused_next_to_the_field_naming_the_rate(portal, partner):
    response = portal.post(PRICING, {"plan_type": "premium", "currency": "usd", "retail_price": "4.99"})

    assert response.status_code == 422
    assert response.context["form"].errors == {
        "retail_price": ["At least the wholesale rate for Premium in USD: $5.00 a month."]}
    assert not RetailPrice.objects.exists()


def test_a_price_with_more_than_two_decimals_is_refused(portal):
    response = portal.post(PRICING, {"plan_type": "pro", "currency": "usd", "retail_price": "7.505"})

    assert response.status_code == 422 and "retail_price" in response.context["form"].errors
    assert not RetailPrice.objects.exists()


def test_the_set_link_of_a_row_fills_the_form_for_it(portal):
    form = portal.get(f"{PRICING}?plan_type=premium").context["form"]

    assert (form["plan_type"].value(), form["currency"].value()) == ("premium", "usd")


# creating a pay-as-you-go mailbox


def payg_radio(page: str) -> str:
    return re.search(r'<input[^>]*value="pay_as_you_go"[^>]*>', page).group(0)


def test_without_a_retail_price_pay_as_you_go_cannot_be_chosen_and_the_page_says_where_to_set_one(portal):
    page = portal.get(NEW).content.decode()

    assert "disabled" in payg_radio(page)
    assert "Pay-as-you-go needs a retail price for the Pro plan" in page
    assert f'href="{PRICING}?plan_type=pro"' in page


def test_with_a_retail_price_pay_as_you_go_can_be_chosen_and_names_the_price(portal, priced):
    page = portal.get(NEW).content.decode()

    assert "disabled" not in payg_radio(page)
    assert "Your customer pays you $7.50 a month." in page


def test_choosing_a_plan_without_a_price_fetches_the_funding_choice_with_pay_as_you_go_disabled(portal, priced):
    response = portal.get(f"{NEW}?plan_id=premium&funding_mode=pay_as_you_go", **HTMX, HTTP_HX_TARGET="mailbox-funding")

    region = response.content.decode()
    assert region.startswith('<fieldset id="mailbox-funding"')
    assert "disabled" in payg_radio(region) and "checked" not in payg_radio(region)
    assert f'href="{NEW}?plan_id=pro&amp;funding_mode=pay_as_you_go"' in region  # Pro has a price


def test_creating_a_pay_as_you_go_mailbox_for_a_plan_without_a_price_is_refused(portal, priced):
    response = create(portal, plan="premium")

    assert response.status_code == 200
    assert response.context["form"].errors["funding_mode"] == [
        "Pay-as-you-go needs a retail price for the Premium plan in USD. Set one on the Retail prices page first."]
    assert not PartnerMailbox.objects.exists() and not Mailbox.objects.filter(address="ann@acme.test").exists()


def test_a_pay_as_you_go_mailbox_waits_for_payment_with_its_account_off_and_its_checkout_link_shown(
        portal, priced, settings):
    settings.PUBLIC_BASE_URL = "https://portal.mailwell.test"

    response = create(portal)

    partner_mailbox = PartnerMailbox.objects.get()
    assert response["Location"] == f"/portal/mailboxes/{partner_mailbox.pk}/"
    assert (partner_mailbox.status, partner_mailbox.funding_mode, partner_mailbox.mailbox.is_active) == (
        "pending_payment", "pay_as_you_go", False)
    checkout = partner_mailbox.purchases.get()
    assert (checkout.amount_minor, checkout.return_url) == (750, "https://portal.mailwell.test/billing/thanks/")
    page = page_of(portal, partner_mailbox)
    assert f'id="checkout-link" type="text" value="{checkout.checkout_url}" readonly' in page
    assert "Email the link to my customer" in page
    assert "Renew for a month" not in page
    assert "deleting it deletes its account too" in page


def test_the_checkout_link_is_emailed_to_the_customer(portal, pending):
    mail.outbox.clear()

    response = portal.post(url(pending, "checkout-link/email"), {"email": "cust@home.test"}, follow=True)

    assert texts(response) == ["Sent to cust@home.test."]
    [sent] = mail.outbox
    checkout_url = pending.purchases.get().checkout_url
    assert sent.to == ["cust@home.test"] and sent.subject == "Your mailbox ann@acme.test: pay to switch it on"
    assert "the mailbox ann@acme.test for you. It costs $7.50 a month." in sent.body
    assert f"Pay here to switch it on:\n{checkout_url}\n" in sent.body
    assert not sent.alternatives  # plain text


def test_with_htmx_the_email_form_answers_with_the_card_and_the_message(portal, pending):
    response = portal.post(url(pending, "checkout-link/email"), {"email": "cust@home.test"}, **HTMX)

    html = response.content.decode()
    assert html.startswith('<section id="payg"') and "Sent to cust@home.test" in html
    assert len(mail.outbox) == 1


def test_an_invalid_customer_address_is_refused_next_to_the_field_and_nothing_is_sent(portal, pending):
    mail.outbox.clear()

    response = portal.post(url(pending, "checkout-link/email"), {"email": "not an address"})

    assert response.context["email_form"].errors == {"email": ["Enter an email address such as ann@example.com."]}
    assert mail.outbox == []


def test_the_email_form_needs_the_csrf_token(alice, partner, pending):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)

    assert strict.post(url(pending, "checkout-link/email"), {"email": "cust@home.test"}).status_code == 403
    assert mail.outbox == []


def test_a_paid_mailbox_has_no_checkout_link_to_email(portal, paid):
    mail.outbox.clear()

    response = portal.post(url(paid, "checkout-link/email"), {"email": "cust@home.test"}, follow=True)

    assert texts(response) == ["ann@acme.test is paid for already: there is no checkout link to send."]
    assert mail.outbox == []


# after the payment


def test_after_the_customer_pays_the_page_shows_the_mailbox_active_and_its_subscription(portal, paid):
    page = page_of(portal, paid)

    assert (paid.status, paid.mailbox.is_active) == ("active", True)
    assert '<span class="visually-hidden">Status: </span>Active' in page
    today = timezone.localdate()
    renews = today + timedelta(days=30)
    assert f'<dt>Current period</dt><dd>{today:%-d %b %Y} – {renews:%-d %b %Y}</dd>' in page
    assert f'<dt>Next billing date</dt><dd>{renews:%-d %b %Y}</dd>' in page
    assert "<dt>Price</dt><dd>$7.50 a month</dd>" in page
    assert "<dt>Payment provider</dt><dd>Local test provider</dd>" in page
    assert "Checkout link" not in page and "Renew for a month" not in page
    assert "Cancel subscription" in page and "Change plan" in page


def test_cancel_asks_for_confirmation_first_without_javascript(portal, paid):
    response = portal.get(url(paid, "subscription/cancel") + "?when=period_end")

    page = response.content.decode()
    assert "Cancel this subscription at the end of the period?" in page
    assert '<input type="hidden" name="when" value="period_end">' in page
    assert paid.subscriptions.get().cancel_at_period_end is False


def test_cancel_at_the_period_end_stops_the_renewal_when_the_provider_confirms(
        portal, paid, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = portal.post(url(paid, "subscription/cancel"), {"when": "period_end"})

    assert response.status_code == 302
    subscription = paid.subscriptions.get()
    assert (subscription.status, subscription.cancel_at_period_end) == ("active", True)
    paid.refresh_from_db()
    assert paid.status == "active"
    page = page_of(portal, paid)
    assert "<dt>Next billing date</dt><dd>None: it does not renew</dd>" in page
    assert "Cancel subscription" not in page


def test_cancel_now_switches_the_mailbox_off_when_the_provider_confirms(
        portal, paid, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = portal.post(url(paid, "subscription/cancel"), {"when": "now"}, follow=True)

    assert texts(response) == ["Requested; the subscription ends now when the payment provider confirms it."]
    paid.refresh_from_db()
    assert (paid.status, paid.mailbox.is_active) == ("expired", False)


def test_a_plan_change_is_requested_and_applies_when_the_provider_confirms_it(
        portal, partner, paid, django_capture_on_commit_callbacks):
    retail_price_set(partner=partner, plan_type="premium", currency="usd", retail_price="12")
    assert 'value="premium">Premium: $12.00 a month</option>' in page_of(portal, paid)

    with django_capture_on_commit_callbacks(execute=True):
        response = portal.post(url(paid, "subscription/plan"), {"new_plan_type": "premium"}, follow=True)

    assert texts(response) == ["Requested; the change applies when the payment provider confirms it."]
    paid.refresh_from_db()
    assert paid.plan_type == "premium"


def test_a_plan_change_to_a_plan_without_a_retail_price_says_so_and_changes_nothing(portal, paid):
    response = portal.post(url(paid, "subscription/plan"), {"new_plan_type": "premium"}, follow=True)

    assert texts(response) == ["That plan has no retail price in your currency yet. Set one on the Retail prices "
                               "page first."]
    paid.refresh_from_db()
    assert paid.plan_type == "pro"


def test_with_htmx_a_plan_change_answers_with_the_card_and_the_status(portal, paid):
    response = portal.post(url(paid, "subscription/plan"), {"new_plan_type": "premium"}, **HTMX)

    html = response.content.decode()
    assert html.startswith('<section id="payg"')
    assert '<section id="mailbox-status" class="card" aria-labelledby="mailbox-status-heading" hx-swap-oob="true">' \
        in html


# delete


def test_deleting_a_pending_mailbox_says_it_deletes_the_account_and_does(portal, pending):
    confirm = portal.get(url(pending, "delete")).content.decode()
    assert "its account is deleted too, and its checkout link stops working" in confirm

    response = portal.post(url(pending, "delete"), follow=True)

    assert texts(response) == ["Mailbox ann@acme.test deleted. Its account is deleted too and its checkout link no "
                               "longer works."]
    assert not PartnerMailbox.objects.exists() and not Mailbox.objects.filter(address="ann@acme.test").exists()
    assert pending.purchases.model.objects.get().status == "expired"


# slot-funded mailboxes


def test_a_slot_mailbox_keeps_renew_and_has_no_subscription_pages(portal, priced):
    create(portal, funding="slot", local_part="sam")
    slot_box = PartnerMailbox.objects.get(mailbox__address="sam@acme.test")

    assert slot_box.funding_mode == "slot" and "Renew for a month" in page_of(portal, slot_box)
    for action in ("checkout-link/email", "subscription/cancel", "subscription/plan"):
        assert portal.post(url(slot_box, action), {"email": "a@b.test"}).status_code == 404


# earnings and payouts


def test_the_earnings_page_shows_the_margin_of_the_payment(portal, paid):
    response = portal.get(EARNINGS)

    [usd] = response.context["balances"]
    assert (usd["available"].minor, usd["reserved"].minor, usd["paid_out"].minor) == (550, 0, 0)
    [chart] = response.context["charts"]
    assert len(chart["bars"]) == 12 and chart["bars"][-1]["count"] == "$5.50" and chart["bars"][-1]["percent"] == 100
    assert [row["amount"] for row in response.context["entries"]] == ["+$5.50"]
    page = response.content.decode()
    assert "Margin: ann@acme.test: Pro mailbox, monthly" in page


def test_a_customers_payment_is_under_earnings_and_not_in_the_partners_own_payment_history(portal, paid):
    earnings = portal.get(EARNINGS).content.decode()
    table = earnings.split('id="customer-payments-heading"', 1)[1].split("</table>", 1)[0]
    assert f'<a href="/portal/mailboxes/{paid.pk}/">ann@acme.test</a>' in table and "$7.50" in table

    billing = portal.get("/portal/billing/")
    assert list(billing.context["payments"].object_list) == []
    assert "$7.50" not in billing.content.decode()
    receipt = Payment.objects.get(purchase__partner_mailbox=paid)
    assert portal.get(f"/portal/billing/payments/{receipt.pk}/receipt/").status_code == 404


def test_a_usd_partner_is_offered_payouts_in_usd_only_and_an_ngn_request_changes_nothing(portal, partner):
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=5_000, kind="margin", description="m")
    page = portal.get(EARNINGS).content.decode()
    form = page.split('id="payout-form"', 1)[1].split("</form>", 1)[0]
    assert '<input type="hidden" name="currency" value="usd"' in form and "ngn" not in form.lower()
    assert "In USD, your billing currency." in form and "At least $20.00." in form and "₦" not in form

    response = portal.post(EARNINGS, {"amount": "30", "currency": "ngn"})
    assert response.status_code == 422 and "currency" in response.context["form"].errors
    with pytest.raises(InvalidFields) as refused:
        payout_request(partner=partner, amount_minor=3_000, currency="ngn")
    assert refused.value.message_dict == {
        "currency": ["your earnings are in your billing currency, USD, and are paid out in it"]}
    assert not Payout.objects.exists() and LedgerEntry.objects.count() == 1


def test_a_payout_request_reserves_the_amount(portal, partner):
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=5_000, kind="margin", description="m")

    response = portal.post(EARNINGS, {"amount": "30", "currency": "usd"}, follow=True)

    assert texts(response) == ["Payout of $30.00 requested. It is reserved from your balance until we pay it."]
    payout = Payout.objects.get()
    assert (payout.partner, payout.amount_minor, payout.currency, payout.status) == (partner, 3_000, "usd", "requested")
    [usd] = response.context["balances"]
    assert (usd["available"].minor, usd["reserved"].minor) == (2_000, 3_000)
    assert "Requested" in response.content.decode()


@pytest.mark.parametrize(("amount", "error"), [
    ("19.99", "At least $20.00."),
    ("50.01", "At most the available balance, $50.00."),
])
def test_a_payout_below_the_minimum_or_above_the_balance_is_refused_next_to_the_amount(portal, partner, amount, error):
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=5_000, kind="margin", description="m")

    response = portal.post(EARNINGS, {"amount": amount, "currency": "usd"})

    assert response.status_code == 422
    assert response.context["form"].errors == {"amount": [error]}
    assert not Payout.objects.exists() and LedgerEntry.objects.count() == 1


def test_the_ledger_is_paged_25_entries_at_a_time(portal, partner):
    LedgerEntry.objects.bulk_create([LedgerEntry(partner=partner, currency="usd", amount_minor=100, kind="margin",
                                                 description=f"Margin {number}") for number in range(30)])

    first = portal.get(EARNINGS)
    second = portal.get(f"{EARNINGS}?page=2", **HTMX, HTTP_HX_TARGET="ledger")

    assert len(first.context["entries"]) == 25
    assert second.content.decode().startswith('<section id="ledger"')
    assert second.content.decode().count("<time") == 5


def test_a_teammate_manages_the_same_mailbox_and_earnings(bob, paid):
    teammate = login_client(bob)

    assert "Cancel subscription" in page_of(teammate, paid)
    assert teammate.get(EARNINGS).context["balances"][0]["available"].minor == 550


def test_a_stranger_gets_404_for_the_mailbox_and_its_subscription_pages(charlie, pending):
    a_partner(charlie.account, "charlie.test")
    stranger = login_client(charlie)

    assert stranger.get(f"/portal/mailboxes/{pending.pk}/").status_code == 404
    assert stranger.get(url(pending, "subscription/cancel")).status_code == 404
    for action in ("checkout-link/email", "subscription/cancel", "subscription/plan", "delete"):
        assert stranger.post(url(pending, action), {"email": "a@b.test", "when": "now",
                                                    "new_plan_type": "premium"}).status_code == 404
    assert mail.outbox == [] and PartnerMailbox.objects.get().status == "pending_payment"


def test_a_stranger_sees_only_his_own_earnings_and_payouts(charlie, partner):
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=5_000, kind="margin", description="m")
    payout_request(partner=partner, amount_minor=3_000, currency="usd")
    a_partner(charlie.account, "charlie.test")

    response = login_client(charlie).get(EARNINGS)

    assert response.context["balances"] == [] and response.context["payouts"] == []
    assert response.context["entries"] == []


def test_an_account_that_is_not_a_partner_sees_how_to_become_one(charlie):
    visitor = login_client(charlie)

    for path in (PRICING, EARNINGS):
        response = visitor.get(path)
        assert response.status_code == 403 and "partner" in response.content.decode().lower()


# the customer's thank-you page


def test_the_thank_you_page_is_public_and_sends_nobody_anywhere(client):
    response = client.get(f"{THANKS}?reference=pur_1&next=https://evil.example/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "We can&#x27;t find this payment" in page or "We can't find this payment" in page
    assert "Thank you" not in page and "evil.example" not in page


def test_after_paying_the_customer_comes_back_to_the_thank_you_page(client, pending):
    token = pending.purchases.get().provider_ref

    response = client.post(f"/billing/checkout/{token}/", {"outcome": "paid"})

    assert response.status_code == 302 and response["Location"].split("?")[0].endswith(THANKS)


# the operator console


@pytest.fixture
def console(client, db):
    from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret

    from testkit.factories import UserFactory

    staff = UserFactory(email="olive@mailwell.test", is_staff=True, is_superuser=True)
    secret = generate_totp_secret()
    TOTP.activate(staff, secret)
    sign_in(client, staff, secret)
    assert client.get("/admin/", **HTML).status_code == 200  # the welcome message shown and gone
    return client


@pytest.fixture
def requests(partner):
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=10_000, kind="margin", description="m")
    return [payout_request(partner=partner, amount_minor=3_000, currency="usd"),
            payout_request(partner=partner, amount_minor=2_000, currency="usd")]


PAYOUTS = "/admin/billing/payout/"


def test_the_console_lists_payouts_in_major_units(console, requests):
    page = console.get(PAYOUTS, **HTML).content.decode()

    assert "30.00" in page and "20.00" in page and "3000" not in page


def test_marking_paid_asks_for_a_note_first_and_changes_nothing_until_applied(console, requests):
    response = console.post(PAYOUTS, {"action": "mark_paid", "_selected_action": [requests[0].pk]}, **HTML)

    assert "Mark payouts paid" in response.content.decode() and 'name="note"' in response.content.decode()
    assert Payout.objects.get(pk=requests[0].pk).status == "requested"


def test_the_console_marks_a_payout_paid_with_its_note(console, requests, partner):
    response = console.post(PAYOUTS, {"action": "mark_paid", "_selected_action": [requests[0].pk], "apply": "1",
                                      "note": "Transfer TX-42"}, follow=True, **HTML)

    payout = Payout.objects.get(pk=requests[0].pk)
    assert (payout.status, payout.note) == ("paid", "Transfer TX-42")
    assert texts(response) == [f"{partner.account.name}'s payout of $30.00 is marked paid."]
    [usd] = balances(partner=partner)
    assert (usd["available"].minor, usd["reserved"].minor, usd["paid_out"].minor) == (5_000, 2_000, 3_000)


def test_the_console_rejects_payouts_releasing_them_and_warns_about_those_decided_already(console, requests, partner):
    console.post(PAYOUTS, {"action": "mark_paid", "_selected_action": [requests[0].pk], "apply": "1", "note": ""},
                 follow=True, **HTML)

    response = console.post(PAYOUTS, {"action": "reject", "_selected_action": [r.pk for r in requests],
                                      "apply": "1", "note": "Bank details missing"}, follow=True, **HTML)

    name = partner.account.name
    assert sorted(texts(response)) == sorted([
        f"{name}'s payout of $20.00 is rejected; the amount is back in their available balance.",
        f"{name}'s payout of $30.00 was not changed: the payout is already paid.",
    ])
    assert Payout.objects.get(pk=requests[1].pk).status == "rejected"
    [usd] = balances(partner=partner)
    assert (usd["available"].minor, usd["reserved"].minor, usd["paid_out"].minor) == (7_000, 0, 3_000)
    page = login_client(partner.account.users.get()).get(EARNINGS).content.decode()
    assert "Bank details missing" in page


def test_retail_prices_and_ledger_entries_are_read_only_in_the_console(console, priced, requests):
    assert console.get("/admin/billing/retailprice/", **HTML).status_code == 200
    assert console.get("/admin/billing/ledgerentry/", **HTML).status_code == 200
    assert console.get("/admin/billing/retailprice/add/", **HTML).status_code == 403
    assert console.get(f"/admin/billing/ledgerentry/{LedgerEntry.objects.first().pk}/delete/", **HTML).status_code == 403
