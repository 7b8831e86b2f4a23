"""The stranger matrix: every route with an object in its URL, walked from the URL patterns (REST,
/v1/hosting, portal, webmail, DAV), is called with every method by another tenant who holds the
same kind of credentials for their own objects. Each answer is 404 (or a refusal of the method
itself, 405 or DAV's 403 for MKCOL, the same for an id no object has), and afterwards every row of
every table (the embedded mail store's included) is what it was.

A route with a parameter that is not in ROUTES (or EXEMPT, with the reason) fails the test, so a
new route is covered from the day it lands. The owner first opens every route with GET: none is a
404, which proves the matrix's ids are real objects (a wrong id would pass as a 404 too), and every
HTML page among them carries the CSP and refuses framing."""
import base64
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from billing.models import Payment
from billing.providers.local import LocalProvider
from billing.services.events import purchase_sync
from billing.services.mailboxes import partner_mailbox_open
from billing.services.partners import partner_approve, pool_purchase_start
from billing.services.payg import payg_mailbox_open, retail_price_set
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.apikeys.services import api_key_create
from calendars.services import calendar_create, calendar_for, event_create, task_create
from campaigns.services import campaign_create, step_add
from contacts.services import (
    address_book_create, address_book_for, client_address_book, contact_create, group_create,
)
from mailcore.domains.services import domain_mark_verified
from mailcore.events.services import emit
from imports.services import (
    INLINE_MAX_ITEMS, contacts_csv_import_start, contacts_import_start, events_import_start,
)
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.forwarding import forwarding_rule_create
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.services import client_create, hosting_partner_enable, slots_grant
from mailcore.sending.models import SendFailure
from mailcore.sending.held import send_hold
from mailcore.sending.screening import Hold
from mailcore.sending.services import SendRequest, mail_send
from mailcore.store.factory import store_for
from mailcore.webhooks.services import endpoint_create
from mailcore.rules.filters import FilterInput, mail_filter_create
from protection.quarantine import quarantine_keep
from protection.services import domain_sender_rule_add, mailbox_sender_rule_add
from testkit.clients import key_client
from testkit.factories import make_message
from testkit.pages import policy_problems

pytestmark = pytest.mark.django_db

PASSWORD = "mailbox-pass-1"
NOWHERE = 987654  # an id no object has
METHODS = ("get", "post", "put", "patch", "delete")
DAV_METHODS = ("GET", "PROPFIND", "PUT", "DELETE", "REPORT", "PROPPATCH", "MKCOL", "MKCALENDAR", "MOVE")

# route (as the URL patterns spell it) -> the surface whose credentials call it
ROUTES = {
    # the integrator REST API (a session of the account: every scope)
    "api-keys/<int:key_id>": "api",
    "api-keys/<int:key_id>/usage": "api",
    "inbox/<int:uid>": "api",
    "inbox/<int:uid>/attachments/<int:index>": "api",
    "contacts/<int:contact_id>": "api",
    "calendar/<int:event_id>": "api",
    "calendar/calendars/<int:calendar_id>": "api",
    "calendar/tasks/<int:task_id>": "api",
    "contacts/address-books/<int:book_id>": "api",
    "labels/<int:label_id>": "api",
    "domains/<int:domain_id>": "api",
    "mail/scheduled/<int:scheduled_id>": "api",
    "mail/held/<int:held_id>/release": "api",
    "mail/held/<int:held_id>/reject": "api",
    "mail/templates/<int:template_id>": "api",
    "protection/sender-rules/<int:rule_id>": "api",
    "mailboxes/connected/<int:mailbox_id>": "api",
    "webhooks/<int:webhook_id>": "api",
    "webhooks/<int:webhook_id>/rotate-secret": "api",
    "webhooks/<int:webhook_id>/test": "api",
    "webhooks/<int:webhook_id>/deliveries": "api",
    "webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/retry": "api",
    "webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/replay": "api",
    # /v1/hosting (a partner key with every partner scope)
    "v1/hosting/domains/<int:domain_id>": "hosting",
    "v1/hosting/domains/<int:domain_id>/verify": "hosting",
    "v1/hosting/domains/<int:domain_id>/catch-all": "hosting",
    "v1/hosting/domains/<int:domain_id>/mta-sts": "hosting",
    "v1/hosting/domains/<int:domain_id>/dmarc": "hosting",
    "v1/hosting/domains/<int:domain_id>/dmarc/reports": "hosting",
    "v1/hosting/domains/<int:domain_id>/monthly-report": "hosting",
    "v1/hosting/domains/<int:domain_id>/dkim": "hosting",
    "v1/hosting/domains/<int:domain_id>/dkim-rotation": "hosting",
    "v1/hosting/domains/<int:domain_id>/protection": "hosting",
    "v1/hosting/domains/<int:domain_id>/sender-rules": "hosting",
    "v1/hosting/domains/<int:domain_id>/sender-rules/<int:rule_id>": "hosting",
    "v1/hosting/quarantine/<str:quarantine_id>": "hosting",
    "v1/hosting/quarantine/<str:quarantine_id>/release": "hosting",
    "v1/hosting/clients/<int:client_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/renew": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/subscription": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/cancel-subscription": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/upgrade": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/addons/purchase": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/forwarding": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/aliases": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/aliases/<int:alias_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/identity": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts/import": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts/imports/<int:job_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts/export": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts/groups": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts/groups/<int:group_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/contacts/<int:contact_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/steps": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/steps/<int:step_id>": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/send": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/pause": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/resume": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/cancel": "hosting",
    "v1/hosting/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/stats": "hosting",
    # the portal (a signed-in user of another partner account)
    "portal/webhooks/<int:endpoint_id>/": "portal",
    "portal/webhooks/<int:endpoint_id>/active/": "portal",
    "portal/webhooks/<int:endpoint_id>/test/": "portal",
    "portal/webhooks/<int:endpoint_id>/rotate-secret/": "portal",
    "portal/webhooks/<int:endpoint_id>/delete/": "portal",
    "portal/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/retry/": "portal",
    "portal/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/replay/": "portal",
    "portal/domains/<int:domain_id>/": "portal",
    "portal/domains/<int:domain_id>/check/": "portal",
    "portal/domains/<int:domain_id>/delete/": "portal",
    "portal/domains/<int:domain_id>/catch-all/": "portal",
    "portal/domains/<int:domain_id>/mta-sts/": "portal",
    "portal/domains/<int:domain_id>/reports/": "portal",
    "portal/domains/<int:domain_id>/reports/monthly/": "portal",
    "portal/domains/<int:domain_id>/dkim/": "portal",
    "portal/domains/<int:domain_id>/dkim/rotate/": "portal",
    "portal/domains/<int:domain_id>/dkim/cancel/": "portal",
    "portal/domains/<int:domain_id>/protection/": "portal",
    "portal/domains/<int:domain_id>/protection/senders/": "portal",
    "portal/domains/<int:domain_id>/protection/senders/<int:rule_id>/delete/": "portal",
    "portal/quarantine/<str:public_id>/": "portal",
    "portal/clients/<int:client_id>/": "portal",
    "portal/clients/<int:client_id>/rename/": "portal",
    "portal/clients/<int:client_id>/lapse-action/": "portal",
    "portal/clients/<int:client_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/": "portal",
    "portal/mailboxes/<int:mailbox_id>/renew/": "portal",
    "portal/mailboxes/<int:mailbox_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/checkout-link/email/": "portal",
    "portal/mailboxes/<int:mailbox_id>/subscription/cancel/": "portal",
    "portal/mailboxes/<int:mailbox_id>/subscription/plan/": "portal",
    "portal/mailboxes/<int:mailbox_id>/identity/": "portal",
    "portal/mailboxes/<int:mailbox_id>/forwarding/": "portal",
    "portal/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>/enabled/": "portal",
    "portal/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/aliases/": "portal",
    "portal/mailboxes/<int:mailbox_id>/aliases/<int:alias_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/add/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/<int:contact_id>/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/<int:contact_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/groups/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/groups/<int:group_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/import/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/import/<int:job_id>/": "portal",
    "portal/mailboxes/<int:mailbox_id>/contacts/export.csv": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/new/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/edit/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/steps/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/steps/<int:step_id>/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/steps/<int:step_id>/delete/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/test/": "portal",
    "portal/mailboxes/<int:mailbox_id>/campaigns/<int:campaign_id>/<str:action>/": "portal",
    "portal/billing/purchases/<str:reference>/": "portal",
    "portal/billing/payments/<int:payment_id>/receipt/": "portal",
    "portal/settings/api-keys/<int:key_id>/": "portal",
    "portal/settings/api-keys/<int:key_id>/revoke/": "portal",
    # the webmail (the owner of another mailbox, signed in to the webmail)
    "webmail/folders/<path:name>/messages/<int:uid>/attachments/<int:index>/": "webmail",
    "webmail/folders/<path:name>/messages/<int:uid>/original/": "webmail",
    "webmail/folders/<path:name>/messages/<int:uid>/actions/": "webmail",
    "webmail/folders/<path:name>/messages/<int:uid>/images/": "webmail",
    "webmail/folders/<path:name>/messages/<int:uid>/invitation/": "webmail",
    "webmail/folders/<path:name>/messages/<int:uid>/": "webmail",
    "webmail/compose/reply/<path:name>/<int:uid>/": "webmail",
    "webmail/compose/reply-all/<path:name>/<int:uid>/": "webmail",
    "webmail/compose/forward/<path:name>/<int:uid>/": "webmail",
    "webmail/compose/drafts/<int:uid>/": "webmail",
    "webmail/compose/sent/<int:scheduled_id>/": "webmail",
    "webmail/compose/sent/<int:scheduled_id>/undo/": "webmail",
    "webmail/compose/failures/<int:failure_id>/dismiss/": "webmail",
    "webmail/settings/forwarding/<int:rule_id>/enabled/": "webmail",
    "webmail/settings/forwarding/<int:rule_id>/delete/": "webmail",
    "webmail/settings/spam/senders/<int:rule_id>/delete/": "webmail",
    "webmail/quarantine/<str:public_id>/": "webmail",
    "webmail/settings/filters/<int:filter_id>/": "webmail",
    "webmail/settings/filters/<int:filter_id>/delete/": "webmail",
    "webmail/settings/filters/<int:filter_id>/move/": "webmail",
    "webmail/contacts/books/<int:book_id>/": "webmail",
    "webmail/contacts/books/<int:book_id>/delete/": "webmail",
    "webmail/contacts/groups/<int:group_id>/": "webmail",
    "webmail/contacts/groups/<int:group_id>/delete/": "webmail",
    "webmail/contacts/<int:contact_id>/": "webmail",
    "webmail/contacts/<int:contact_id>/edit/": "webmail",
    "webmail/contacts/<int:contact_id>/delete/": "webmail",
    "webmail/contacts/import/<int:job_id>/": "webmail",
    "webmail/calendar/import/<int:job_id>/": "webmail",
    "webmail/calendar/events/<int:event_id>/": "webmail",
    "webmail/calendar/events/<int:event_id>/edit/": "webmail",
    "webmail/calendar/events/<int:event_id>/delete/": "webmail",
    "webmail/calendar/calendars/<int:calendar_id>/": "webmail",
    "webmail/calendar/calendars/<int:calendar_id>/delete/": "webmail",
    "webmail/calendar/tasks/<int:task_id>/done/": "webmail",
    "webmail/calendar/tasks/<int:task_id>/delete/": "webmail",
    "webmail/bulk/<path:name>/": "webmail",
    "webmail/conversations/<path:name>/<int:uid>/": "webmail",
    "webmail/folders/<path:name>/": "webmail",
    # CardDAV and CalDAV (Basic sign-in as another mailbox)
    r"^dav(?:/(?P<path>.*))?$": "dav",
}

# Routes with a parameter that is not an object of an account, and why they are not in the matrix.
EXEMPT = {
    r"^\.well-known/(?P<service>carddav|caldav)/?$": "a fixed redirect to /dav/; the parameter is a service name",
    "u/<str:token>": "a signed unsubscribe token (api/tests/test_tracking.py: a forged one is 404)",
    "t/o/<str:token>.gif": "a signed tracking token (api/tests/test_tracking.py)",
    "t/c/<str:token>": "a signed tracking token (api/tests/test_tracking.py)",
    "webmail/calendar/feed/<str:token>.ics": "a secret feed token kept as a digest (calendars/tests/test_calendars_core.py)",
    "v1/hosting/forwarding/confirm/<str:token>": "a signed confirmation link (test_hosting_management.py)",
    "billing/checkout/<str:token>/": "the local provider's hosted checkout, reached by its secret token",
    "billing/webhooks/<str:provider>": "payment providers' signed events (billing/tests: a bad signature is 400)",
    r"accounts/^confirm-email/(?P<key>[-:\w]+)/$": "allauth's signed e-mail confirmation key",
    r"accounts/^password/reset/key/(?P<uidb36>[0-9A-Za-z]+)-(?P<key>.+)/$": "allauth's password reset token",
    "webmail/quarantine/release/<str:token>": "a signed one-click release token (protection/tests/test_quarantine_digest.py)",
}
# Routes about a pay-as-you-go subscription: their mailbox is the paid one.
PAY_AS_YOU_GO = {
    "v1/hosting/mailboxes/<int:mailbox_id>/subscription", "v1/hosting/mailboxes/<int:mailbox_id>/cancel-subscription",
    "v1/hosting/mailboxes/<int:mailbox_id>/upgrade", "portal/mailboxes/<int:mailbox_id>/subscription/cancel/",
    "portal/mailboxes/<int:mailbox_id>/subscription/plan/", "portal/mailboxes/<int:mailbox_id>/checkout-link/email/",
}
ADMIN = "admin/"  # the operators' admin: staff only (test_a_stranger_never_reaches_the_admin)

# What may change when a stranger is refused: sign-in and rate-limit bookkeeping, not data.
CHANGING = {"django_session", "mailcore_apikeyusage", "mailcore_apikeydailyusage"}


def _routes(patterns, prefix: str = ""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and ("<" in route or "(?P" in route):
            yield route


ALL_ROUTES = sorted(set(_routes(get_resolver().url_patterns)))


def test_every_route_with_a_parameter_is_in_the_matrix_or_exempt_with_a_reason():
    missing = [route for route in ALL_ROUTES if route not in ROUTES and route not in EXEMPT
               and not route.startswith(ADMIN)]
    assert missing == [], "add these routes to ROUTES (or EXEMPT, with the reason):\n" + "\n".join(missing)
    gone = [route for route in [*ROUTES, *EXEMPT] if route not in ALL_ROUTES]
    assert gone == [], f"no longer routes: {gone}"


def _partner_side(user, domain_name: str, local_part: str):
    """An approved partner with a client, a verified domain of that client and a mailbox on it."""
    partner = partner_approve(partner=hosting_partner_enable(account=user.account, status="pending"))
    client = client_create(partner=partner, name=f"Client of {domain_name}")
    domain = domain_mark_verified(domain=domain_add_for_partner(partner=partner, name=domain_name, client=client))
    slots_grant(partner=partner, count=2)
    box = partner_mailbox_open(partner=partner, domain=domain, local_part=local_part, password=PASSWORD,
                               plan_id="premium")
    return partner, client, domain, box


def _webmail(address: str) -> Client:
    client = Client()
    response = client.post("/webmail/", {"address": address, "password": PASSWORD})
    assert response.status_code == 302, response.content[:400]
    return client


class World:
    """alice's account with one of everything; charlie's, the stranger's, with the same kinds of
    credentials and his own (empty) mailbox."""

    def __init__(self, alice, charlie, receiver, capture):
        partner, client, domain, box = _partner_side(alice, "acme.test", "ann")
        mailbox = box.mailbox
        store = store_for(mailbox)
        store.ensure_folders()
        invite = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nPRODID:-//T//EN\r\nBEGIN:VEVENT\r\n"
                  "UID:meet-1\r\nDTSTAMP:20310101T000000Z\r\nDTSTART:20310305T100000Z\r\n"
                  "DTEND:20310305T110000Z\r\nSUMMARY:Meet\r\nORGANIZER:mailto:ann@elsewhere.test\r\n"
                  "ATTENDEE:mailto:ann@acme.test\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
        store.create_folder("Secret")  # a folder of ann's: the stranger has none of that name
        uid = store.append("Secret", make_message(
            "Secret plans", "for ann only", to=mailbox.address, html='<p>hi <img src="https://evil.example/x.png"></p>',
            attachments=[("plan.txt", "text/plain", b"the plan"), ("invite.ics", "text/calendar", invite.encode())]))
        draft = store.append("Drafts", make_message("Draft", "unsent", to="x@elsewhere.test"), flags=("\\Draft",))
        scheduled = mail_send(account=alice.account, user=alice, request=SendRequest(
            from_email=mailbox.address, to=["reader@elsewhere.test"], subject="Later", body_text="later",
            scheduled_at=datetime.now(UTC) + timedelta(days=3)))
        held = mail_send(account=alice.account, user=alice, request=SendRequest(
            from_email=mailbox.address, to=["reader@elsewhere.test"], subject="Held", body_text="held"))
        send_hold(held, Hold(score=15.0, threshold=10.0, reasons=("Gtube pattern",)))
        failure = SendFailure.objects.create(message=scheduled, mailbox=mailbox, draft_uid=draft, recipients=[
            {"recipient": "reader@elsewhere.test", "reply": "550 5.1.1 No such user"}])
        book = client_address_book(client=client)
        group = group_create(book=book, name="Bakers")
        hosted_contact = contact_create(book=book, name="Bea", email="bea@shop.test", groups=["Bakers"])
        campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="Launch",
                                   subject="Hi", body_html="<p>Hi</p>", postal_address="1 Market Street")
        step = step_add(campaign=campaign, subject="Again", body_html="<p>Again</p>", delay_hours=48)
        endpoint, _ = endpoint_create(account=alice.account, url=receiver.url(), events=["email.sent"])
        emit(account=alice.account, name="email.sent", data={"id": "1"})
        delivery = endpoint.deliveries.get()
        key, _ = api_key_create(account=alice.account, created_by=alice, name="owner's", scopes=["send"])
        own_contact = contact_create(book=address_book_for(account=alice.account), name="Own", email="own@x.test")
        event = event_create(calendar=calendar_for(account=alice.account), title="Board",
                             start=datetime(2031, 3, 5, 10, tzinfo=UTC), end=datetime(2031, 3, 5, 11, tzinfo=UTC))
        personal_book = address_book_for(account=alice.account, mailbox=mailbox)
        personal = contact_create(book=personal_book, name="Pal", email="pal@x.test")
        personal_group = group_create(book=personal_book, name="Friends")
        personal_event = event_create(calendar=calendar_for(account=alice.account, mailbox=mailbox), title="Dentist",
                                      start=datetime(2031, 3, 6, 10, tzinfo=UTC),
                                      end=datetime(2031, 3, 6, 11, tzinfo=UTC))
        work = calendar_create(account=alice.account, mailbox=mailbox, name="Work", slug="work")
        task = task_create(calendar=work, title="Secret task")
        suppliers = address_book_create(account=alice.account, mailbox=mailbox, name="Suppliers", slug="suppliers")
        rule = forwarding_rule_create(mailbox=mailbox, email=mailbox.address, forward_to="far@elsewhere.test")
        alias = alias_create(mailbox=mailbox, alias_address="sales@acme.test")
        mail_filter = mail_filter_create(mailbox=mailbox, data=FilterInput(
            field="from", match="contains", value="boss", action="move", folder="Archive"))
        purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=1,
                                       return_url="https://partner.example/back")
        LocalProvider().checkout_complete(purchase.provider_ref, paid=True)
        purchase_sync(purchase)
        retail_price_set(partner=partner, plan_type="pro", currency="usd", retail_price="7.50")
        payg = payg_mailbox_open(partner=partner, domain=domain, local_part="pat", password=PASSWORD, plan_id="pro",
                                 return_url="https://partner.example/back")
        with capture(execute=True):
            LocalProvider().checkout_complete(payg.purchases.get().provider_ref, paid=True)
        csv_rows = "".join(f"p{n}@people.test\n" for n in range(INLINE_MAX_ITEMS + 1))
        _, csv_job = contacts_csv_import_start(book=book, text="email\n" + csv_rows)
        events_job = events_import_start(calendar=calendar_for(account=alice.account, mailbox=mailbox), text=(
            "BEGIN:VCALENDAR\r\n" + "".join(f"BEGIN:VEVENT\r\nUID:i{n}\r\nDTSTART:20310101T090000Z\r\nEND:VEVENT\r\n"
                                           for n in range(INLINE_MAX_ITEMS + 1)) + "END:VCALENDAR\r\n"))
        cards_job = contacts_import_start(book=personal_book, text="".join(
            f"BEGIN:VCARD\r\nVERSION:4.0\r\nFN:P{n}\r\nEND:VCARD\r\n" for n in range(INLINE_MAX_ITEMS + 1)))
        held_spam = quarantine_keep(mailbox=mailbox, raw=make_message("Prize", "claim it", to=mailbox.address),
                                    envelope_from="win@prize.test", score=12.0, reasons=["Looks like spam"],
                                    symbols={})
        owner_rule = mailbox_sender_rule_add(mailbox=mailbox, kind="block", sender="pest@shop.test")
        domain_rule = domain_sender_rule_add(domain=domain, kind="allow", sender="bank.test")
        label = self._label(alice)
        template = self._template(alice)
        connected = Mailbox.objects.create(account=alice.account, kind=Mailbox.Kind.CONNECTED, local_part="me",
                                           address="me@elsewhere.test", imap_host="imap.elsewhere.test",
                                           imap_port=993, imap_username="me")
        self.api_values = {"key_id": key.pk, "uid": uid, "index": 2, "contact_id": own_contact.pk,
                           "event_id": event.pk, "label_id": label, "scheduled_id": scheduled.pk,
                           "held_id": held.pk, "template_id": template, "webhook_id": endpoint.pk, "delivery_id": delivery.pk,
                           "domain_id": domain.pk, "mailbox_id": connected.pk,
                           "calendar_id": work.pk, "task_id": task.pk, "book_id": suppliers.pk}
        self.api_query = f"?email={mailbox.address}&folder=Secret"
        self.hosting_values = {"domain_id": domain.pk, "client_id": client.pk, "mailbox_id": box.pk,
                               "rule_id": rule.pk, "alias_id": alias.pk, "group_id": group.pk,
                               "contact_id": hosted_contact.pk, "campaign_id": campaign.pk, "step_id": step.pk,
                               "job_id": csv_job.pk, "quarantine_id": held_spam.public_id}
        self.portal_values = {**self.hosting_values, "endpoint_id": endpoint.pk, "delivery_id": delivery.pk,
                              "action": "pause", "reference": purchase.reference,
                              "payment_id": Payment.objects.get(purchase=purchase).pk, "key_id": key.pk,
                              "public_id": held_spam.public_id}
        self.webmail_values = {"name": "Secret", "uid": uid, "index": 2, "scheduled_id": scheduled.pk,
                               "rule_id": rule.pk, "filter_id": mail_filter.pk, "group_id": personal_group.pk,
                               "contact_id": personal.pk, "event_id": personal_event.pk, "failure_id": failure.pk,
                               "job_id": events_job.pk, "calendar_id": work.pk, "task_id": task.pk,
                               "book_id": suppliers.pk, "public_id": held_spam.public_id}
        # routes whose parameter names an object of another kind than the surface's value of that name
        self.route_values = {
            "webmail/contacts/import/<int:job_id>/": {**self.webmail_values, "job_id": cards_job.pk},
            "protection/sender-rules/<int:rule_id>": {**self.api_values, "rule_id": owner_rule.pk},
            "webmail/settings/spam/senders/<int:rule_id>/delete/": {**self.webmail_values, "rule_id": owner_rule.pk},
            "v1/hosting/domains/<int:domain_id>/sender-rules/<int:rule_id>": {
                **self.hosting_values, "rule_id": domain_rule.pk},
            "portal/domains/<int:domain_id>/protection/senders/<int:rule_id>/delete/": {
                **self.portal_values, "rule_id": domain_rule.pk},
        }
        self.payg_values = {**self.hosting_values, "mailbox_id": payg.pk}
        self.drafts_uid = draft
        self.dav_paths = [f"principals/{mailbox.address}/", f"addressbooks/{mailbox.address}/",
                          f"addressbooks/{mailbox.address}/contacts/", f"calendars/{mailbox.address}/",
                          f"calendars/{mailbox.address}/calendar/",
                          f"calendars/{mailbox.address}/calendar/{personal_event.href}",
                          f"addressbooks/{mailbox.address}/contacts/{personal.href}",
                          f"calendars/{mailbox.address}/work/", f"calendars/{mailbox.address}/work/{task.href}",
                          f"addressbooks/{mailbox.address}/suppliers/"]
        self.owner = self._credentials(alice, mailbox.address)
        self.owner_address = mailbox.address

        charlie.account.plan = alice.account.plan
        charlie.account.save()
        _, _, _, theirs = _partner_side(charlie, "charlie.test", "carl")
        store_for(theirs.mailbox).ensure_folders()
        for mailbox in (None, theirs.mailbox):  # made on first use: his own, before the matrix runs
            address_book_for(account=charlie.account, mailbox=mailbox)
            calendar_for(account=charlie.account, mailbox=mailbox)
        self.stranger = self._credentials(charlie, theirs.mailbox.address)

    @staticmethod
    def _label(alice) -> int:
        from mailcore.inbox.labels import label_create

        return label_create(account=alice.account, name="Invoices", color="#1A73E8").pk

    @staticmethod
    def _template(alice) -> int:
        from mailcore.sending.mail_templates import template_create

        return template_create(account=alice.account, created_by=alice, name="Welcome", subject="Hi",
                               body_html="<p>Hi</p>").pk

    @staticmethod
    def _credentials(user, address: str) -> dict:
        api = APIClient()
        api.force_login(user)
        portal = Client()
        portal.force_login(user)
        basic = "Basic " + base64.b64encode(f"{address}:{PASSWORD}".encode()).decode()
        return {"api": api, "hosting": key_client(user, list(PARTNER_SCOPES)), "portal": portal,
                "webmail": _webmail(address), "dav": basic}

    def values(self, surface: str, route: str = "") -> dict:
        if route in PAY_AS_YOU_GO:
            return self.payg_values
        if route in self.route_values:
            return self.route_values[route]
        return {"api": self.api_values, "hosting": self.hosting_values, "portal": self.portal_values,
                "webmail": self.webmail_values}[surface]


def fill(route: str, values: dict) -> str:
    def value(match):
        name = match.group(2)
        assert name in values, f"{route}: the matrix has no value for <{name}>"
        return str(values[name])

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


def snapshot() -> dict:
    """Every row of every table (the embedded mail store's included), but the sign-in bookkeeping."""
    rows = {}
    for model in apps.get_models():
        table = model._meta.db_table
        if table not in CHANGING:
            rows[table] = list(model._default_manager.order_by("pk").values_list())
    return rows


def changed(before: dict, after: dict) -> dict:
    return {table: (len(before[table]), len(after[table])) for table in before if before[table] != after[table]}


@pytest.fixture
def world(plans, alice, charlie, receiver, settings, tmp_path, django_capture_on_commit_callbacks):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    return World(alice, charlie, receiver, django_capture_on_commit_callbacks)


def _refused_before_any_lookup(refused, nowhere) -> bool:
    """A method the route refuses to everyone (405, or DAV's 403 for MKCOL) answers the same for an
    object that does not exist: the answer tells the stranger nothing."""
    return (refused.status_code in (403, 405) and refused.status_code == nowhere.status_code
            and refused.content == nowhere.content)


def _call(client, method: str, path: str):
    if method == "get":
        return client.get(path)
    return getattr(client, method)(path, "{}", content_type="application/json")


def _paths(world) -> list[tuple[str, str, str]]:
    """(surface, the owner's object's path, the same path with ids no object has) for each route."""
    paths = []
    for route, surface in ROUTES.items():
        if surface != "dav":
            query = world.api_query if route.startswith(("inbox/", "protection/")) else ""
            paths.append((surface, fill(route, world.values(surface, route)) + query,
                          fill(route, dict.fromkeys(world.values(surface, route), NOWHERE)) + query))
    return paths


def test_every_route_with_an_object_is_404_to_a_stranger_with_every_method_and_changes_nothing(world):
    paths, pages = _paths(world), 0
    for surface, path, _ in paths:
        opened = world.owner[surface].get(path)
        assert opened.status_code != 404, f"the owner cannot open {path}: a wrong id"
        if opened.status_code == 200 and opened.get("Content-Type", "").startswith("text/html"):
            assert policy_problems(opened) == [], path  # the pages with an id carry the CSP too
            pages += 1
    assert pages >= 30
    before = snapshot()
    answers = {}
    for surface, path, nowhere in paths:
        for method in METHODS:
            refused = _call(world.stranger[surface], method, path)
            if refused.status_code != 404 and not _refused_before_any_lookup(
                    refused, _call(world.stranger[surface], method, nowhere)):
                answers[f"{method.upper()} {path}"] = refused.status_code
    assert answers == {}, "a stranger was not answered 404"
    assert changed(before, snapshot()) == {}
    assert len(paths) * len(METHODS) > 500


def test_every_dav_path_of_another_mailbox_is_404_with_every_method(world, client):
    before = snapshot()
    answers = {}
    for path in world.dav_paths:
        assert client.generic("PROPFIND", "/dav/" + path, HTTP_AUTHORIZATION=world.owner["dav"],
                              HTTP_DEPTH="0").status_code == 207, path
        nowhere = path.replace(world.owner_address, "nobody@acme.test")
        for method in DAV_METHODS:
            refused, elsewhere = (client.generic(method, "/dav/" + where, "", HTTP_AUTHORIZATION=world.stranger["dav"],
                                                 HTTP_DEPTH="0") for where in (path, nowhere))
            if refused.status_code != 404 and not _refused_before_any_lookup(refused, elsewhere):
                answers[f"{method} /dav/{path}"] = refused.status_code
    assert answers == {}
    assert changed(before, snapshot()) == {}


def test_a_stranger_never_reaches_the_admin(world):
    admin_routes = [route for route in ALL_ROUTES if route.startswith(ADMIN) and "<path:object_id>" in route]
    assert admin_routes
    for route in admin_routes:
        path = "/" + route.replace("<path:object_id>", "1").replace("<path:content_type_id>", "1")
        for method in ("get", "post"):
            response = getattr(world.stranger["portal"], method)(path)
            assert response.status_code == 302 and "/admin/login/" in response["Location"], (method, path)
