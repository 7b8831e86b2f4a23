"""Demo data for `make run` and scripts. Create-if-missing: running it again never overwrites what a user
changed (passwords, sessions, slots, plans); --json adds only the keys it prints. Refused in production."""
import json

from allauth.account.models import EmailAddress
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from mailcore.accounts.models import Account, User
from mailcore.partners.models import HostingPartner
from mailcore.accounts.services import user_create_with_account
from mailcore.partners.services import hosting_partner_enable
from mailcore.apikeys.scopes import PARTNER_SCOPES, USER_SCOPES
from mailcore.apikeys.services import api_key_create
from mailcore.demo import demo_mailbox_seeded
from mailcore.domains.models import Domain
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.services import mailbox_create
from mailcore.partners.models import PartnerClient
from mailcore.partners.services import slots_grant
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for

PREMIUM = {"email": "demo@mailwell.test", "password": "demo-pass-2026", "domain": "demo.mailwell.test"}
PARTNER = {"email": "partner@mailwell.test", "password": "partner-pass-2026", "domain": "acme-bakery.test"}
MAILBOXES = [("hello", "Hello Team"), ("support", "Support")]
MAILBOX_PASSWORD = "mailbox-pass-2026"
OPERATOR = {"email": "operator@mailwell.test", "password": "operator-pass-2026"}
APPLICANT = {"email": "applicant@mailwell.test", "password": "applicant-pass-2026"}
# Every login above with its published password (mailcore.checks refuses to serve production with any).
DEMO_USER_LOGINS = {login["email"]: login["password"] for login in (PREMIUM, PARTNER, OPERATOR, APPLICANT)}
DEMO_MAILBOX_LOGINS = {f"{local_part}@{PREMIUM['domain']}": MAILBOX_PASSWORD for local_part, _ in MAILBOXES}
CLIENT_NAME = "Acme Bakery"
DEMO_SLOTS = 10  # unused mailbox slots the demo partner starts with


def _user(email: str, password: str, plan_code: str) -> tuple[User, bool]:
    """The demo user, created (verified, on plan_code) if missing; an existing one is left as its owner made it."""
    user = User.objects.filter(email=email).select_related("account").first()
    if user is not None:
        return user, False
    user = user_create_with_account(email=email, password=password, plan_code=plan_code)
    EmailAddress.objects.update_or_create(user=user, email=email, defaults={"verified": True, "primary": True})
    return user, True


def _demo_mail(mailbox: Mailbox) -> None:
    """A few messages for the webmail demo, once (only into an empty Inbox): a welcome with a remote
    picture (held back until allowed), a conversation with the owner's own reply in Sent, an attachment."""
    store = store_for(mailbox)
    try:
        store.ensure_folders()
        if store.list("INBOX", per_page=1).total:
            return
    except StoreError:
        return  # the mail server is not running: the demo works without messages
    me, amy = mailbox.address, "Amy Baker <amy@acme-bakery.test>"

    def message(sender, to, subject, body, *, message_id, html="", refs="", attachment=None) -> bytes:
        from email.message import EmailMessage
        from email.utils import formatdate

        made = EmailMessage()
        made["From"], made["To"], made["Subject"], made["Date"] = sender, to, subject, formatdate(usegmt=True)
        made["Message-ID"] = message_id
        if refs:
            made["In-Reply-To"], made["References"] = refs.split()[-1], refs
        made.set_content(body)
        if html:
            made.add_alternative(html, subtype="html")
        if attachment:
            made.add_attachment(attachment[1], maintype="text", subtype="csv", filename=attachment[0])
        return made.as_bytes()

    store.deliver(message("Mailwell <welcome@mailwell.test>", me, "Welcome to your webmail",
                          "Welcome! Press ? for keyboard shortcuts.", message_id="<welcome@mailwell.test>",
                          html="<h2>Welcome!</h2><p>Press <b>?</b> for keyboard shortcuts.</p>"
                               '<p><img src="https://picsum.photos/480/160" alt="A picture from the internet" '
                               'width="480"></p><p>Pictures from the internet wait until you allow them.</p>'),
                  recipient=me, envelope_from="welcome@mailwell.test")
    store.deliver(message(amy, me, "Bread order for Friday", "Could you confirm 40 loaves for Friday?",
                          message_id="<order@acme-bakery.test>"), recipient=me, envelope_from="amy@acme-bakery.test")
    store.append("Sent", message(me, amy, "Re: Bread order for Friday", "Confirmed: 40 loaves on Friday.",
                                 message_id="<confirm@demo.mailwell.test>", refs="<order@acme-bakery.test>"),
                 flags=("\\Seen",))
    store.deliver(message(amy, me, "Re: Bread order for Friday", "Thank you! The price list is attached.",
                          message_id="<thanks@acme-bakery.test>",
                          refs="<order@acme-bakery.test> <confirm@demo.mailwell.test>",
                          attachment=("prices.csv", b"item,price\nloaf,3.20\n")),
                  recipient=me, envelope_from="amy@acme-bakery.test")


def _verified_domain(account: Account, name: str, client: PartnerClient | None = None) -> Domain:
    domain = Domain.objects.filter(name=name).first()
    if domain is None:
        domain = domain_mark_verified(domain=domain_create(account=account, name=name, client=client))
    return domain


class Command(BaseCommand):
    help = "Create the demo accounts if missing (never overwrites). --json prints them with fresh API keys."

    def add_arguments(self, parser):
        parser.add_argument("--json", dest="as_json", action="store_true", help="Print one JSON object with new API keys.")

    @transaction.atomic
    def handle(self, *args, as_json: bool = False, **options):
        if settings.PRODUCTION:
            raise CommandError("seed_demo refuses to run with DJANGO_ENV=production: demo accounts have published "
                               "passwords. Create the first operator with `manage.py createsuperuser`.")
        premium_user, _ = _user(PREMIUM["email"], PREMIUM["password"], "premium")
        premium = premium_user.account
        domain = _verified_domain(premium, PREMIUM["domain"])
        addresses = []
        for local_part, display_name in MAILBOXES:
            mailbox = Mailbox.objects.filter(address=f"{local_part}@{domain.name}").first()
            if mailbox is None:
                mailbox = mailbox_create(
                    domain=domain, local_part=local_part, password=MAILBOX_PASSWORD, display_name=display_name
                )
            addresses.append(mailbox.address)
        _demo_mail(Mailbox.objects.get(address=addresses[0]))
        demo_mailbox_seeded(mailbox=Mailbox.objects.get(address=addresses[0]))

        partner_user, _ = _user(PARTNER["email"], PARTNER["password"], "premium")
        partner = HostingPartner.objects.filter(account=partner_user.account).first()
        if partner is None:
            partner = hosting_partner_enable(account=partner_user.account, status=HostingPartner.Status.ACTIVE)
            slots_grant(partner=partner, count=DEMO_SLOTS)
        client, _ = PartnerClient.objects.get_or_create(partner=partner, name=CLIENT_NAME)
        partner_domain = _verified_domain(partner.account, PARTNER["domain"], client)

        operator, created = _user(OPERATOR["email"], OPERATOR["password"], "free")
        if created:
            User.objects.filter(pk=operator.pk).update(is_staff=True, is_superuser=True)
        applicant, created = _user(APPLICANT["email"], APPLICANT["password"], "free")
        if created:
            hosting_partner_enable(account=applicant.account, status=HostingPartner.Status.PENDING)

        if not as_json:
            self.stdout.write(
                "Demo data ready.\n"
                f"  Premium account: {PREMIUM['email']} / {PREMIUM['password']}\n"
                f"    domain {domain.name}, mailboxes {', '.join(addresses)} (password {MAILBOX_PASSWORD})\n"
                f"  Hosting partner: {PARTNER['email']} / {PARTNER['password']}\n"
                f"    client {client.name}, domain {partner_domain.name}\n"
                f"  Operator console (/admin/, sets up an authenticator app on first login): "
                f"{OPERATOR['email']} / {OPERATOR['password']}\n"
                f"  Partner applicant awaiting approval: {APPLICANT['email']} / {APPLICANT['password']}\n"
                "  API keys: run `python manage.py seed_demo --json` for fresh ones."
            )
            return
        _, premium_key = api_key_create(
            account=premium, created_by=premium_user, name="demo (seed_demo --json)", scopes=list(USER_SCOPES)
        )
        _, partner_key = api_key_create(
            account=partner.account,
            created_by=partner_user,
            name="demo (seed_demo --json)",
            scopes=list(USER_SCOPES) + list(PARTNER_SCOPES),
        )
        output = {
            "accounts": {
                "premium": {
                    "email": PREMIUM["email"],
                    "password": PREMIUM["password"],
                    "api_key": premium_key,
                    "domain": domain.name,
                    "mailboxes": addresses,
                },
                "partner": {
                    "email": PARTNER["email"],
                    "password": PARTNER["password"],
                    "api_key": partner_key,
                    "client_id": client.pk,
                    "domain": partner_domain.name,
                },
            }
        }
        self.stdout.write(json.dumps(output))
