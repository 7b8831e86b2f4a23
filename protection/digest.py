"""The daily quarantine digest: one message per mailbox that has newly quarantined mail, delivered
into its Inbox, branded with its hosting partner's name and linking to signed one-click releases
(no sign-in; a link releases its message once, because a release is once). Each run is a DigestRun
row, so the operator sees that the job runs and what it did."""
import logging
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from django.conf import settings
from django.core import signing
from django.db.models import Max
from django.template.loader import render_to_string
from django.utils import timezone

from mailcore.domains.dkim import dkim_sign
from mailcore.mailboxes.models import Mailbox
from mailcore.store.factory import store_for
from protection.models import DigestRun, Quarantined

log = logging.getLogger(__name__)

DIGEST_EVERY = timedelta(hours=24)  # a mailbox gets at most one digest a day
LINK_SALT = "protection.quarantine.release"
PRODUCT_NAME = "Mailwell"


class LinkInvalid(Exception):
    """A release link that was tampered with, has expired, or names a message that is gone."""


def digest_link_token(item: Quarantined) -> str:
    return signing.dumps({"q": item.public_id}, salt=LINK_SALT, compress=True)


def digest_link_item(token: str) -> Quarantined:
    """The message a release link names; raises LinkInvalid."""
    try:
        value = signing.loads(token, salt=LINK_SALT, max_age=timedelta(days=settings.QUARANTINE_DAYS))
    except signing.SignatureExpired:
        raise LinkInvalid("This link has expired; sign in to your webmail to see your quarantine.") from None
    except signing.BadSignature:
        raise LinkInvalid("This link is not valid; sign in to your webmail to see your quarantine.") from None
    try:
        return Quarantined.objects.select_related("mailbox__account").get(public_id=value.get("q"))
    except Quarantined.DoesNotExist:
        raise LinkInvalid("This message is no longer kept; the quarantine keeps messages "
                          f"{settings.QUARANTINE_DAYS} days.") from None


def _brand(mailbox: Mailbox) -> tuple[str, str]:
    """The name the digest is signed with and the base of its links: the partner's brand and its
    verified webmail hostname for a partner's client mailbox, the platform's otherwise."""
    base, name = f"{settings.PUBLIC_BASE_URL.rstrip('/')}/webmail", PRODUCT_NAME
    partner_mailbox = getattr(mailbox, "partner_mailbox", None)
    if partner_mailbox is None:
        return name, base
    partner = partner_mailbox.partner
    brand = getattr(partner, "webmail_brand", None)
    name = (brand.brand_name if brand and brand.brand_name else "") or partner.account.name
    hostname = getattr(partner, "webmail_hostname", None)
    if hostname is not None and hostname.verified_at is not None:
        base = f"https://{hostname.hostname}"
    return name, base


def digest_message(mailbox: Mailbox, items: list[Quarantined]) -> bytes:
    brand, base = _brand(mailbox)
    rows = [{"item": item, "link": f"{base}/quarantine/release/{digest_link_token(item)}"} for item in items]
    context = {"brand": brand, "mailbox": mailbox, "rows": rows, "list_url": f"{base}/quarantine/",
               "days": settings.QUARANTINE_DAYS}
    message = EmailMessage()
    message["From"] = f'"{brand}" <postmaster@{settings.SYSTEM_MAIL_DOMAIN}>'
    message["To"] = mailbox.address
    count = len(items)
    message["Subject"] = f"{count} message{'s' if count != 1 else ''} held in your quarantine"
    message["Date"] = format_datetime(timezone.now())
    message["Message-ID"] = make_msgid(domain=settings.SYSTEM_MAIL_DOMAIN)
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(render_to_string("protection/digest.txt", context))
    message.add_alternative(render_to_string("protection/digest.html", context), subtype="html")
    # Stored straight into the Inbox (never past the scanner it reports on), yet signed and aligned
    # as all mail we originate, so it still verifies if the owner forwards it on.
    return dkim_sign(bytes(message), domain_name=settings.SYSTEM_MAIL_DOMAIN)


def _mailboxes_due(now) -> list[int]:
    """Mailboxes with waiting messages no digest listed yet, whose last digest is a day old or more."""
    fresh = (Quarantined.objects.filter(released_at__isnull=True, deleted_at__isnull=True, notified_at__isnull=True)
             .values_list("mailbox", flat=True).distinct())
    recent = (Quarantined.objects.filter(mailbox__in=fresh).values("mailbox")
              .annotate(last=Max("notified_at")).filter(last__gt=now - DIGEST_EVERY)
              .values_list("mailbox", flat=True))
    return sorted(set(fresh) - set(recent))


def quarantine_digests_send() -> dict:
    """The digest job: each due mailbox gets its digest; the run is recorded whatever happens."""
    run = DigestRun.objects.create()
    now = timezone.now()
    try:
        for mailbox in Mailbox.objects.filter(pk__in=_mailboxes_due(now), is_active=True).select_related(
                "account", "partner_mailbox__partner__account"):
            items = list(Quarantined.objects.filter(mailbox=mailbox, released_at__isnull=True,
                                                    deleted_at__isnull=True, notified_at__isnull=True)
                         .defer("raw").order_by("-created_at"))
            try:
                store_for(mailbox).append("INBOX", digest_message(mailbox, items))
            except Exception as error:  # one mailbox's store must not stop the others' digests
                log.exception("quarantine digest for %s not delivered", mailbox.address)
                run.failures += 1
                run.problem = f"{mailbox.address}: {error}"[:2000]
                continue
            Quarantined.objects.filter(pk__in=[item.pk for item in items]).update(notified_at=now)
            run.digests_sent += 1
            run.messages_listed += len(items)
    except Exception as error:
        run.problem = f"the run stopped: {error}"[:2000]
        raise
    finally:
        run.finished_at = timezone.now()
        run.save()
    return {"digests": run.digests_sent, "messages": run.messages_listed, "failures": run.failures}


def digest_last_run() -> DigestRun | None:
    return DigestRun.objects.first()


def digest_overdue() -> bool:
    """True when no digest run finished in the last two days: the job has stopped (the console says so)."""
    last = DigestRun.objects.filter(finished_at__isnull=False).first()
    return last is None or last.finished_at < timezone.now() - timedelta(days=2)
