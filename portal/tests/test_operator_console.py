"""The operator console at /admin/: staff only, through allauth's sign-in with a TOTP code; partner
decisions, refunds and cancellations through the services; the price table edited in a form."""
import re
import time
from datetime import timedelta

import pytest
import time_machine
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP, format_hotp_value, generate_totp_secret, hotp_value
from django.core import mail
from django.utils import timezone

from billing.models import LocalCheckout, Payment, Price, ProviderEventRecord, Purchase, Subscription
from billing.money import Money
from billing.providers.local import LocalProvider
from billing.selectors.prices import price
from mailcore.partners.models import HostingPartner, MailboxSlot, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import PASSWORD, UserFactory, make_domain, make_mailbox

pytestmark = pytest.mark.django_db

HTML = {"HTTP_ACCEPT": "text/html"}
CONSOLE = "/admin/"
PARTNERS = "/admin/mailcore/hostingpartner/"
ACTIVATE_TOTP = "/accounts/2fa/totp/activate/"
NOW = timezone.now().replace(microsecond=0)


def totp_code(secret: str) -> str:
    """The authenticator app's current code (waiting out the last second of a period)."""
    if time.time() % 30 > 29:
        time.sleep(1.1)
    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))


def sign_in(client, user, secret: str | None = None, next_url: str = CONSOLE):
    """allauth's sign-in as a person does it: password, then the TOTP page when the user has one."""
    response = client.post(f"/accounts/login/?next={next_url}", {"login": user.email, "password": PASSWORD}, **HTML)
    assert response.status_code == 302, response.content
    if secret is not None:
        assert response["Location"] == "/accounts/2fa/authenticate/"
        response = client.post("/accounts/2fa/authenticate/", {"code": totp_code(secret)}, **HTML)
        assert response.status_code == 302
    assert response["Location"] == next_url
    return response


def texts(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


@pytest.fixture
def staff(db):
    """An operator: staff, superuser, verified email; TOTP is added by `staff_secret`."""
    return UserFactory(email="olive@mailwell.test", is_staff=True, is_superuser=True)


@pytest.fixture
def staff_secret(staff) -> str:
    secret = generate_totp_secret()
    TOTP.activate(staff, secret)
    return secret


@pytest.fixture
def console(client, staff, staff_secret):
    """A browser signed in as the operator, TOTP step passed (the welcome message shown and gone)."""
    sign_in(client, staff, staff_secret)
    assert client.get(CONSOLE, **HTML).status_code == 200
    return client


@pytest.fixture
def applicant(db):
    user = UserFactory(email="pat@resell.test", account__name="Resell Ltd", account__plan_code="free")
    return hosting_partner_enable(account=user.account, status=HostingPartner.Status.PENDING)


def partner_state(partner: HostingPartner) -> tuple:
    partner.refresh_from_db()
    return (partner.status, partner.billing_currency, partner.trial_ends_at, partner.decided_at, partner.decision_note)


def paid_plan(account, *, amount_minor: int = 900) -> Purchase:
    """A Pro plan bought through the local provider's checkout: purchase, payment and subscription."""
    checkout = LocalCheckout.objects.create(token="lchk_operator", reference="MW-TEST-1", description="Mailwell Pro",
                                            amount_minor=amount_minor, currency="usd", recurring=True)
    purchase = Purchase.objects.create(
        reference="MW-TEST-1", account=account, kind=Purchase.Kind.PLAN, item="pro", amount_minor=amount_minor,
        currency="usd", recurring=True, provider="local", provider_ref=checkout.token,
        description="Mailwell Pro plan, monthly")
    LocalProvider().checkout_complete(checkout.token, paid=True)
    return purchase


# who gets in


def test_a_visitor_is_sent_to_allauths_sign_in(client):
    response = client.get(CONSOLE, follow=True, **HTML)
    assert response.redirect_chain == [("/admin/login/?next=/admin/", 302), ("/accounts/login/?next=%2Fadmin%2F", 302)]


def test_a_signed_in_user_who_is_not_staff_is_refused(client, alice):
    sign_in(client, alice, next_url="/")
    for url in (CONSOLE, "/admin/billing/price/", "/admin/login/"):
        response = client.get(url, follow=True, **HTML)
        assert response.status_code == 403, url
        assert b"Operator console" not in response.content


def test_a_staff_user_without_totp_sets_it_up_once_and_goes_on_to_the_console(client, staff):
    sign_in(client, staff)
    for url in (CONSOLE, "/admin/billing/price/"):
        response = client.get(url, follow=True, **HTML)
        # the password just typed is not asked for again: straight to the QR code
        assert response.redirect_chain[1:] == [(ACTIVATE_TOTP, 302)], url
        assert response.status_code == 200
    assert "The operator console needs two-factor authentication. Set up an authenticator app here, then " \
           "open the console again." in texts(response)
    # the pending secret stays the same across reloads until it is confirmed
    secret = client.session["mfa.totp.secret"]
    page = client.get(ACTIVATE_TOTP, **HTML).content.decode()
    assert client.session["mfa.totp.secret"] == secret and f'value="{secret}"' in page
    response = client.post(ACTIVATE_TOTP, {"code": totp_code(secret)}, follow=True, **HTML)
    assert Authenticator.objects.filter(user=staff, type=Authenticator.Type.TOTP).count() == 1
    assert '<a class="btn btn--primary btn--sm" href="/admin/">Continue to the operator console</a>' in \
        response.content.decode()
    # the code just entered was this session's second factor: the console opens
    assert client.get(CONSOLE, **HTML).status_code == 200


def test_a_wrong_code_at_set_up_keeps_the_same_secret_and_adds_nothing(client, staff):
    sign_in(client, staff)
    client.get(ACTIVATE_TOTP, **HTML)
    secret = client.session["mfa.totp.secret"]
    response = client.post(ACTIVATE_TOTP, {"code": "000000" if totp_code(secret) != "000000" else "111111"}, **HTML)
    assert response.status_code == 200
    assert client.session["mfa.totp.secret"] == secret
    assert not Authenticator.objects.filter(user=staff).exists()
    assert client.get(CONSOLE, **HTML).status_code == 302


def test_a_password_typed_long_ago_is_asked_for_again_before_an_authenticator_is_added(client, staff):
    sign_in(client, staff)
    with time_machine.travel(timezone.now() + timedelta(minutes=10)):
        response = client.get(ACTIVATE_TOTP, **HTML)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/reauthenticate/")


def test_a_staff_user_with_totp_signs_in_with_a_code_and_reaches_the_console(client, staff, staff_secret):
    response = client.post("/accounts/login/?next=/admin/", {"login": staff.email, "password": PASSWORD}, **HTML)
    assert response["Location"] == "/accounts/2fa/authenticate/"
    assert client.get(CONSOLE, **HTML)["Location"] == "/admin/login/?next=/admin/"  # not signed in before the code

    response = client.post("/accounts/2fa/authenticate/", {"code": totp_code(staff_secret)}, **HTML)
    assert response["Location"] == CONSOLE
    response = client.get(CONSOLE, **HTML)
    assert response.status_code == 200
    assert b"Operator console" in response.content
    assert b'href="/admin/billing/price/"' in response.content


def test_a_wrong_code_keeps_the_staff_user_out(client, staff, staff_secret):
    client.post("/accounts/login/?next=/admin/", {"login": staff.email, "password": PASSWORD}, **HTML)
    wrong = f"{(int(totp_code(staff_secret)) + 1) % 1_000_000:06d}"
    response = client.post("/accounts/2fa/authenticate/", {"code": wrong}, **HTML)
    assert response.status_code == 200
    assert client.get(CONSOLE, **HTML)["Location"] == "/admin/login/?next=/admin/"


def test_a_staff_session_that_skipped_the_totp_step_must_enter_a_code(client, staff, staff_secret):
    client.force_login(staff)  # a session made without allauth's TOTP step
    response = client.get(CONSOLE, follow=True, **HTML)
    assert response.redirect_chain[-1] == ("/accounts/2fa/reauthenticate/?next=%2Fadmin%2F", 302)
    assert "Enter a code from your authenticator app to open the operator console." in texts(response)

    response = client.post("/accounts/2fa/reauthenticate/?next=%2Fadmin%2F", {"code": totp_code(staff_secret)},
                           **HTML)
    assert response["Location"] == CONSOLE
    assert client.get(CONSOLE, **HTML).status_code == 200


# partner applications


def test_approving_with_ngn_and_10_days_starts_the_trial_and_emails_the_applicant(
        console, applicant, settings, django_capture_on_commit_callbacks):
    settings.PARTNER_TRIAL_DAYS = 14
    response = console.post(PARTNERS, {"action": "approve", "_selected_action": [applicant.pk]}, **HTML)
    assert response.status_code == 200
    assert response.context["form"]["trial_days"].value() == 14
    assert "Resell Ltd" in response.content.decode()
    assert partner_state(applicant)[0] == HostingPartner.Status.PENDING  # nothing until it is applied

    with time_machine.travel(NOW, tick=False), django_capture_on_commit_callbacks(execute=True):
        response = console.post(PARTNERS, {"action": "approve", "_selected_action": [applicant.pk], "apply": "Approve",
                                           "currency": "ngn", "trial_days": "10", "note": "Welcome aboard."},
                                follow=True, **HTML)

    assert partner_state(applicant) == (HostingPartner.Status.TRIAL, "ngn", NOW + timedelta(days=10), NOW,
                                        "Welcome aboard.")
    assert texts(response) == [f"Approved Resell Ltd: a 10-day trial in NGN until {NOW + timedelta(days=10):%d %b %Y}."
                               " The applicant is emailed."]
    [sent] = mail.outbox
    assert sent.to == ["pat@resell.test"]
    assert sent.subject == "Your Mailwell partner account is approved"
    assert "/portal/billing/slots/" in sent.body
    assert "Welcome aboard." in sent.body


def test_an_approval_without_valid_days_shows_the_form_again_and_changes_nothing(console, applicant):
    before = partner_state(applicant)
    response = console.post(PARTNERS, {"action": "approve", "_selected_action": [applicant.pk], "apply": "Approve",
                                       "currency": "eur", "trial_days": "0"}, **HTML)
    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"currency", "trial_days"}
    assert partner_state(applicant) == before
    assert mail.outbox == []


def test_declining_rejects_the_application_and_emails_the_applicant(
        console, applicant, django_capture_on_commit_callbacks):
    with time_machine.travel(NOW, tick=False), django_capture_on_commit_callbacks(execute=True):
        response = console.post(PARTNERS, {"action": "decline", "_selected_action": [applicant.pk], "apply": "Decline",
                                           "note": "We host partners in Nigeria and the US only."},
                                follow=True, **HTML)

    assert partner_state(applicant) == (HostingPartner.Status.REJECTED, "usd", None, NOW,
                                        "We host partners in Nigeria and the US only.")
    assert texts(response) == ["Declined Resell Ltd. The applicant is emailed."]
    [sent] = mail.outbox
    assert sent.to == ["pat@resell.test"]
    assert sent.subject == "Your Mailwell partner application"
    assert "We host partners in Nigeria and the US only." in sent.body


def test_approving_a_partner_that_is_not_pending_changes_nothing_and_says_so(
        console, applicant, django_capture_on_commit_callbacks):
    HostingPartner.objects.filter(pk=applicant.pk).update(status=HostingPartner.Status.ACTIVE)
    before = partner_state(applicant)

    response = console.post(PARTNERS, {"action": "approve", "_selected_action": [applicant.pk]}, **HTML)
    assert "None of the selected applications is pending." in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(PARTNERS, {"action": "approve", "_selected_action": [applicant.pk], "apply": "Approve",
                                           "currency": "ngn", "trial_days": "10"}, follow=True, **HTML)

    assert partner_state(applicant) == before
    assert texts(response) == ["Resell Ltd was not changed: the application is active, not pending."]
    assert mail.outbox == []


# the price table


def test_the_price_form_changes_a_price_and_the_price_selector_returns_it(console):
    row = Price.objects.get(item="plan:pro", currency="usd")
    url = f"/admin/billing/price/{row.pk}/change/"
    page = console.get(url, **HTML).content.decode()
    assert 'name="amount_minor"' in page
    assert 'name="item"' not in page and 'name="currency"' not in page
    assert "$9.00" in page

    response = console.post(url, {"amount_minor": "1250", "item": "plan:premium", "currency": "ngn"}, **HTML)

    assert response.status_code == 302
    assert price("plan:pro", "usd") == Money(1250, "usd")
    row.refresh_from_db()
    assert (row.item, row.currency, row.amount_minor) == ("plan:pro", "usd", 1250)


def test_a_price_of_nothing_is_refused(console):
    row = Price.objects.get(item="slot:pro", currency="ngn")
    response = console.post(f"/admin/billing/price/{row.pk}/change/", {"amount_minor": "0"}, **HTML)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "amount_minor": ["A price is at least 1 minor unit (a cent or a kobo)."]}
    assert price("slot:pro", "ngn") == Money(300_000, "ngn")


def test_prices_cannot_be_deleted(console):
    row = Price.objects.get(item="plan:pro", currency="usd")
    assert console.get(f"/admin/billing/price/{row.pk}/delete/", **HTML).status_code == 403
    assert Price.objects.filter(pk=row.pk).exists()


# money rows: read-only, written by services and providers


@pytest.mark.parametrize("model", ["purchase", "payment", "subscription", "providereventrecord"])
def test_money_rows_have_no_add_or_delete(console, model, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        paid_plan(alice.account)
    assert console.get(f"/admin/billing/{model}/add/", **HTML).status_code == 403
    listing = console.get(f"/admin/billing/{model}/", **HTML)
    assert listing.status_code == 200
    assert f'href="/admin/billing/{model}/add/"' not in listing.content.decode()
    assert "delete_selected" not in listing.content.decode()


@pytest.mark.parametrize("model", [Purchase, Payment, Subscription])
def test_money_fields_are_read_only_in_the_change_form(console, model, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        paid_plan(alice.account)
    row = model.objects.get()
    url = f"/admin/billing/{model._meta.model_name}/{row.pk}/change/"
    page = console.get(url, **HTML).content.decode()
    assert "$9.00" in page
    assert "<input" not in re.sub(r'<input type="hidden"[^>]*>', "", page.split('id="content-main"')[1])

    response = console.post(url, {"amount_minor": "1", "currency": "ngn"}, **HTML)

    assert response.status_code == 403
    row.refresh_from_db()
    assert (row.amount_minor, row.currency) == (900, "usd")


def test_a_provider_event_shows_its_payload_pretty_printed(console, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        paid_plan(alice.account)
    record = ProviderEventRecord.objects.get()
    page = console.get(f"/admin/billing/providereventrecord/{record.pk}/change/", **HTML).content.decode()
    assert '<pre>{\n  &quot;amount_minor&quot;: 900,\n' in page


def test_refund_asks_the_provider_and_the_purchase_is_refunded_when_its_event_arrives(
        console, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        purchase = paid_plan(alice.account)

    with django_capture_on_commit_callbacks() as provider_events:
        response = console.post("/admin/billing/purchase/", {"action": "refund", "_selected_action": [purchase.pk]},
                                follow=True, **HTML)
    assert texts(response) == ["Refund requested for MW-TEST-1 ($9.00); it shows as refunded when the provider "
                               "confirms."]
    purchase.refresh_from_db()
    assert (purchase.status, purchase.payments.get().refunded_at) == (Purchase.Status.PAID, None)

    for deliver in provider_events:  # the provider's refund event
        deliver()
    purchase.refresh_from_db()
    assert purchase.status == Purchase.Status.REFUNDED
    assert purchase.payments.get().refunded_at is not None


def test_refunding_a_purchase_already_refunded_says_so(console, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        purchase = paid_plan(alice.account)
    Payment.objects.update(refunded_at=NOW)
    with django_capture_on_commit_callbacks() as provider_events:
        response = console.post("/admin/billing/purchase/", {"action": "refund", "_selected_action": [purchase.pk]},
                                follow=True, **HTML)
    assert texts(response) == ["MW-TEST-1: purchase MW-TEST-1 has no payment left to refund."]
    assert provider_events == []


def test_cancel_at_period_end_goes_through_the_provider(console, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        paid_plan(alice.account)
    subscription = Subscription.objects.get()

    with django_capture_on_commit_callbacks(execute=True):
        response = console.post("/admin/billing/subscription/", {"action": "cancel_renewal",
                                                                 "_selected_action": [subscription.pk]},
                                follow=True, **HTML)

    assert texts(response) == [f"Cancellation requested for {alice.account.name}'s pro subscription: it ends on "
                               f"{subscription.current_period_end:%d %b %Y} once the provider confirms."]
    subscription.refresh_from_db()
    assert (subscription.status, subscription.cancel_at_period_end) == (Subscription.Status.ACTIVE, True)
    alice.account.refresh_from_db()
    assert alice.account.plan.code == "pro"  # until the period ends


# what the console never shows


def test_a_mailbox_page_shows_no_password_hash(console, alice):
    mailbox = make_mailbox(alice.account, "ann@example.test")
    page = console.get(f"/admin/mailcore/mailbox/{mailbox.pk}/change/", **HTML).content.decode()
    assert "ann@example.test" in page
    assert mailbox.password_hash not in page
    assert "password" not in page.split('id="content-main"')[1].lower()


# labels


def test_every_model_the_console_shows_has_a_plural_and_a_name_of_its_own(console, alice,
                                                                          django_capture_on_commit_callbacks):
    from billing.models import LedgerEntry, Payout, RetailPrice
    from portal.console.sites import site

    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    with django_capture_on_commit_callbacks(execute=True):
        purchase = paid_plan(alice.account)
    slot = MailboxSlot.objects.create(partner=partner, plan_type="pro")
    domain = make_domain(alice.account, "acme.test")
    partner_mailbox = PartnerMailbox.objects.create(
        partner=partner, mailbox=make_mailbox(alice.account, "ann@acme.test"), plan_type="pro", status="active",
        expires_at=NOW + timedelta(days=30))
    RetailPrice.objects.create(partner=partner, plan_type="pro", currency="usd", amount_minor=1500)
    payout = Payout.objects.create(partner=partner, currency="usd", amount_minor=700)
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=-700, kind="payout", payout=payout,
                               description="Payout requested")

    index = console.get(CONSOLE, **HTML).content.decode()
    assert "Ledger entries" in index and "Partner mailboxes" in index
    labels = re.findall(r'<a href="/admin/\w+/\w+/">([^<]+)</a>', index)
    assert len(labels) == len(site._registry)
    assert [label for label in labels if re.search(r"(?:[^aeiou]ys|xs)\b", label.lower())] == []
    for model in site._registry:
        plural = str(model._meta.verbose_name_plural)
        assert not plural.endswith(("ys", "xs", "chs", "shs", "ss")) or plural.endswith("ies"), plural
        for instance in model.objects.all()[:3]:
            assert " object (" not in str(instance), model
    assert str(partner) == f"{alice.account.name} (partner, active)"
    assert str(partner_mailbox) == "ann@acme.test (pro, active)"
    assert str(slot) == f"Pro slot #{slot.pk}, 30 days (unused)"
    assert str(payout) == f"Payout #{payout.pk} of $7.00 (requested)"
    page = console.get(f"/admin/mailcore/hostingpartner/{partner.pk}/change/", **HTML).content.decode()
    assert f"{alice.account.name} (partner, active)" in page and "HostingPartner object" not in page
    assert str(purchase) and str(domain) == "acme.test"


def test_the_console_pages_link_the_site_icon(console):
    """Django's admin pages name no icon of their own: without the link every one logs a 404 for /favicon.ico."""
    for url in (CONSOLE, "/admin/billing/price/"):
        page = console.get(url, **HTML)
        assert page.status_code == 200, url
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page.content.decode(), url
