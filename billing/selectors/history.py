"""An account's own purchases and payments (the portal's billing pages), and a partner's slot pool.

Every lookup is scoped to the account: another account's purchase or payment does not exist for it
(DoesNotExist, which the portal answers with 404)."""
from datetime import timedelta

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from billing.models import Payment, Purchase
from mailcore.accounts.models import Account
from mailcore.partners.models import HostingPartner, MailboxSlot

UNSETTLED = (Purchase.Status.PENDING, Purchase.Status.FAILED, Purchase.Status.EXPIRED)
# Bought by a partner's customer at the partner's checkout link: the partner earns a margin on them
# (its earnings), but they are not the partner's own spending.
CUSTOMER_KINDS = (Purchase.Kind.MAILBOX, Purchase.Kind.MAILBOX_STORAGE, Purchase.Kind.MAILBOX_EXTRA)


def account_purchase_get(*, account: Account, reference: str) -> Purchase:
    return Purchase.objects.get(account=account, reference=reference)


def account_purchase_returned(*, account: Account, reference: str = "") -> Purchase:
    """The purchase a provider's page sent the buyer back for: by our reference or the provider's own
    (Paystack appends its transaction reference), else the account's latest purchase."""
    purchases = Purchase.objects.filter(account=account)
    if not reference:
        return purchases.latest("created_at", "id")
    return purchases.filter(Q(reference=reference) | Q(provider_ref=reference)).latest("created_at", "id")


def buyer_purchase_get(*, reference: str) -> Purchase:
    """A pay-as-you-go mailbox's checkout, for the public page its customer returns to: found by our
    reference or the provider's (Paystack appends its own), never any other kind of purchase."""
    if not reference:
        raise Purchase.DoesNotExist
    return Purchase.objects.select_related("partner_mailbox__mailbox", "partner_mailbox__partner__account").filter(
        Q(reference=reference) | Q(provider_ref=reference), kind=Purchase.Kind.MAILBOX).latest("created_at", "id")


def account_payments_declined(*, account: Account, days: int = 14, limit: int = 5) -> list[Purchase]:
    """Checkouts of the account declined at the provider lately and not paid since (the billing page's
    notice), newest first: a later paid checkout for the same mailbox, or of the same kind for the
    account's own purchases, settles the notice."""
    since = timezone.now() - timedelta(days=days)
    paid_since = Purchase.objects.filter(account=account, status=Purchase.Status.PAID, kind=OuterRef("kind"),
                                         created_at__gt=OuterRef("created_at"))
    paid_for_mailbox = paid_since.filter(partner_mailbox=OuterRef("partner_mailbox"))
    paid_for_account = paid_since.filter(partner_mailbox__isnull=True)
    return list(Purchase.objects.filter(account=account, status=Purchase.Status.FAILED, created_at__gte=since)
                .exclude(Q(partner_mailbox__isnull=False) & Exists(paid_for_mailbox))
                .exclude(Q(partner_mailbox__isnull=True) & Exists(paid_for_account))
                .select_related("partner_mailbox__mailbox")[:limit])


def account_purchases_unsettled(*, account: Account, limit: int = 10) -> list[Purchase]:
    """Recent purchases still waiting for payment, or that failed or expired."""
    return list(Purchase.objects.filter(account=account, status__in=UNSETTLED).exclude(kind__in=CUSTOMER_KINDS)[:limit])


def account_payments(*, account: Account) -> QuerySet[Payment]:
    """What the account itself paid (its receipts); its customers' pay-as-you-go payments are earnings."""
    return Payment.objects.filter(account=account).exclude(purchase__kind__in=CUSTOMER_KINDS).select_related("purchase")


def partner_customer_payments(*, partner: HostingPartner) -> QuerySet[Payment]:
    """The payments the partner's customers made for their pay-as-you-go mailboxes, newest first."""
    return (Payment.objects.filter(account=partner.account, purchase__kind__in=CUSTOMER_KINDS)
            .select_related("purchase__partner_mailbox__mailbox"))


def account_payment_get(*, account: Account, payment_id: int) -> Payment:
    return account_payments(account=account).get(pk=payment_id)


def partner_slot_pool(*, partner: HostingPartner) -> list[dict]:
    """The pool by plan: unused, assigned and expired slots (slots bought for no plan fund either)."""
    rows = (MailboxSlot.objects.filter(partner=partner).values("plan_type").annotate(
        unused=Count("id", filter=Q(status=MailboxSlot.Status.UNUSED)),
        assigned=Count("id", filter=Q(status=MailboxSlot.Status.ASSIGNED)),
        expired=Count("id", filter=Q(status=MailboxSlot.Status.EXPIRED))))
    found = {row["plan_type"]: row for row in rows}
    pool = []
    for plan_type in ("pro", "premium", ""):
        row = found.get(plan_type, {"unused": 0, "assigned": 0, "expired": 0})
        if plan_type or plan_type in found:
            pool.append({"plan_type": plan_type, "unused": row["unused"], "assigned": row["assigned"],
                         "expired": row["expired"]})
    return pool
