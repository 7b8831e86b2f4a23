"""What the console lists, and the actions operators take. Rows are read-only: customers, services
and payment providers write them. The writes an operator makes are admin actions that call the
services the API calls (partner decisions, refunds, plan cancellation); only the price table is
edited in a form, because the console is where prices live."""
import json

from allauth.mfa.models import Authenticator
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth import get_permission_codename
from django.db.models import Count, Exists, OuterRef
from django.template.response import TemplateResponse
from django.utils.html import format_html

from billing.models import LedgerEntry, Payment, Payout, Price, ProviderEventRecord, Purchase, RetailPrice, Subscription
from billing.money import Money
from billing.selectors.prices import wholesale_monthly
from billing.services.ledger import payout_decide
from billing.services.partners import partner_approve, partner_reject
from billing.services.plans import plan_change, plan_subscription
from billing.services.refunds import payment_refund, purchase_refund
from mailcore.accounts.models import Account, User
from mailcore.domains.models import Domain
from mailcore.errors import DomainError
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import HostingPartner, MailboxSlot, PartnerMailbox
from portal.console.forms import PartnerApproveForm, PartnerDeclineForm, PayoutDecisionForm, PriceForm
from portal.console.sites import site


def _money(minor: int, currency: str) -> str:
    return str(Money(int(minor), currency))


def _pretty_json(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def _may(request, action: str, opts) -> bool:
    """Whether the operator holds the model's `action` permission (actions reuse "change")."""
    return request.user.has_perm(f"{opts.app_label}.{get_permission_codename(action, opts)}")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows a service or a provider writes: shown, never added, edited or deleted here."""

    list_per_page = 50

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


# accounts and people


@admin.register(Account, site=site)
class AccountAdmin(ReadOnlyAdmin):
    list_display = ["name", "plan", "user_count", "user_emails", "is_partner", "created_at"]
    list_filter = ["plan", "created_at"]
    search_fields = ["name", "users__email"]
    fields = ["name", "plan", "user_emails", "created_at"]
    readonly_fields = ["user_emails"]
    date_hierarchy = "created_at"

    def get_queryset(self, request):
        return (super().get_queryset(request).select_related("plan", "partner").prefetch_related("users")
                .annotate(user_total=Count("users", distinct=True)))

    @admin.display(description="Users", ordering="user_total")
    def user_count(self, account: Account) -> int:
        return account.user_total

    @admin.display(description="Emails")
    def user_emails(self, account: Account) -> str:
        return ", ".join(user.email for user in account.users.all())

    @admin.display(description="Partner", boolean=True)
    def is_partner(self, account: Account) -> bool:
        return hasattr(account, "partner")


@admin.register(User, site=site)
class UserAdmin(ReadOnlyAdmin):
    list_display = ["email", "account", "is_staff", "is_superuser", "is_active", "two_factor", "last_login",
                    "date_joined"]
    list_filter = ["is_staff", "is_superuser", "is_active"]
    search_fields = ["email", "account__name"]
    list_select_related = ["account"]
    fields = ["email", "account", "is_staff", "is_superuser", "is_active", "two_factor", "last_login", "date_joined"]
    readonly_fields = ["two_factor"]
    ordering = ["email"]

    def get_queryset(self, request):
        totp = Authenticator.objects.filter(user=OuterRef("pk"), type=Authenticator.Type.TOTP)
        return super().get_queryset(request).annotate(has_totp=Exists(totp))

    @admin.display(description="TOTP", boolean=True, ordering="has_totp")
    def two_factor(self, user: User) -> bool:
        return user.has_totp


# hosting partners


@admin.register(HostingPartner, site=site)
class HostingPartnerAdmin(ReadOnlyAdmin):
    list_display = ["partner", "status", "billing_currency", "trial_ends_at", "domain_limit", "created_at"]
    list_filter = ["status", "billing_currency", "created_at"]
    search_fields = ["account__name", "account__users__email"]
    list_select_related = ["account"]
    readonly_fields = ["domain_limit"]
    actions = ["approve", "decline"]
    date_hierarchy = "created_at"

    @admin.display(description="Partner", ordering="account__name")
    def partner(self, partner: HostingPartner) -> str:
        return partner.account.name

    @admin.display(description="Domain limit")
    def domain_limit(self, partner: HostingPartner) -> int:
        return partner.domain_limit

    def has_decide_permission(self, request) -> bool:
        return _may(request, "change", self.opts)

    @admin.action(description="Approve (start trial)", permissions=["decide"])
    def approve(self, request, queryset):
        return self._decide(request, queryset, form_class=PartnerApproveForm, title="Approve partner applications")

    @admin.action(description="Decline", permissions=["decide"])
    def decline(self, request, queryset):
        return self._decide(request, queryset, form_class=PartnerDeclineForm, title="Decline partner applications")

    def _decide(self, request, queryset, *, form_class, title):
        """First the decision page (currency, trial, note); on its submit, the service for each partner."""
        partners = list(queryset.select_related("account").order_by("account__name"))
        approving = form_class is PartnerApproveForm
        if "apply" in request.POST:
            form = form_class(request.POST)
            if form.is_valid():
                for partner in partners:
                    self._decide_one(request, partner, approving, form.cleaned_data)
                return None
        else:
            form = form_class()
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.opts,
            "form": form,
            "partners": partners,
            "pending": [partner for partner in partners if partner.status == HostingPartner.Status.PENDING],
            "action": "approve" if approving else "decline",
            "approving": approving,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/operator/partner_decision.html", context)

    def _decide_one(self, request, partner: HostingPartner, approving: bool, choice: dict) -> None:
        name = partner.account.name
        try:
            if approving:
                partner = partner_approve(partner=partner, currency=choice["currency"],
                                          trial_days=choice["trial_days"], note=choice["note"])
            else:
                partner = partner_reject(partner=partner, note=choice["note"])
        except DomainError as error:
            self.message_user(request, f"{name} was not changed: {error.detail}.", messages.WARNING)
            return
        if approving:
            self.message_user(request, f"Approved {name}: a {choice['trial_days']}-day trial in "
                                       f"{partner.billing_currency.upper()} until {partner.trial_ends_at:%d %b %Y}. "
                                       "The applicant is emailed.", messages.SUCCESS)
        else:
            self.message_user(request, f"Declined {name}. The applicant is emailed.", messages.SUCCESS)


@admin.register(MailboxSlot, site=site)
class MailboxSlotAdmin(ReadOnlyAdmin):
    list_display = ["id", "partner", "status", "plan_type", "term_days", "purchased_at", "expires_at"]
    list_filter = ["status", "plan_type", "term_days"]
    search_fields = ["partner__account__name"]
    list_select_related = ["partner__account"]

    @admin.display(description="Partner", ordering="partner__account__name")
    def partner(self, slot: MailboxSlot) -> str:
        return slot.partner.account.name


@admin.register(PartnerMailbox, site=site)
class PartnerMailboxAdmin(ReadOnlyAdmin):
    list_display = ["mailbox", "partner", "plan_type", "status", "funding_mode", "expires_at", "created_at"]
    list_filter = ["status", "plan_type", "funding_mode"]
    search_fields = ["mailbox__address", "partner__account__name"]
    list_select_related = ["mailbox", "partner__account"]

    @admin.display(description="Partner", ordering="partner__account__name")
    def partner(self, partner_mailbox: PartnerMailbox) -> str:
        return partner_mailbox.partner.account.name


# mail


@admin.register(Domain, site=site)
class DomainAdmin(ReadOnlyAdmin):
    list_display = ["name", "account", "client", "status", "verified_at", "check_attempts", "created_at"]
    list_filter = ["status", "mailserver_added", "created_at"]
    search_fields = ["name", "account__name", "client__name"]
    list_select_related = ["account", "client"]
    fields = ["name", "account", "client", "status", "verification_token", "verified_at", "mailserver_added",
              "dns_check_pretty", "check_attempts", "next_check_at", "failure_reported_at", "created_at"]
    readonly_fields = ["dns_check_pretty"]

    @admin.display(description="Last DNS check")
    def dns_check_pretty(self, domain: Domain) -> str:
        return _pretty_json(domain.dns_check)


@admin.register(Mailbox, site=site)
class MailboxAdmin(ReadOnlyAdmin):
    # No password hash and no stored IMAP password: the console never shows a credential.
    list_display = ["address", "account", "kind", "plan", "is_active", "created_at"]
    list_filter = ["kind", "is_active", "plan"]
    search_fields = ["address", "display_name", "account__name"]
    list_select_related = ["account", "plan"]
    fields = ["address", "account", "kind", "domain", "local_part", "display_name", "plan", "extra_storage_mb",
              "is_active", "imap_host", "imap_port", "imap_tls", "imap_username", "imap_session_verified_at",
              "smtp_host", "smtp_port", "smtp_security", "smtp_username", "created_at"]


# money: provider truth, read-only; refunds and cancellations go to the provider


@admin.register(Purchase, site=site)
class PurchaseAdmin(ReadOnlyAdmin):
    list_display = ["reference", "account", "kind", "description", "amount", "status", "provider",
                    "payment_method", "created_at", "paid_at"]
    list_filter = ["status", "kind", "provider", "currency", "recurring", "payment_method"]
    search_fields = ["reference", "provider_ref", "account__name"]
    list_select_related = ["account"]
    readonly_fields = ["amount"]
    date_hierarchy = "created_at"
    actions = ["refund"]

    @admin.display(description="Amount", ordering="amount_minor")
    def amount(self, purchase: Purchase) -> str:
        return _money(purchase.amount_minor, purchase.currency)

    def has_refund_permission(self, request) -> bool:
        return _may(request, "change", self.opts)

    @admin.action(description="Refund", permissions=["refund"])
    def refund(self, request, queryset):
        for purchase in queryset:
            try:
                payments = purchase_refund(purchase=purchase)
            except DomainError as error:
                self.message_user(request, f"{purchase.reference}: {error.detail}.", messages.WARNING)
                continue
            total = _money(sum(payment.amount_minor for payment in payments), purchase.currency)
            self.message_user(request, f"Refund requested for {purchase.reference} ({total}); it shows as "
                                       "refunded when the provider confirms.", messages.SUCCESS)


@admin.register(Payment, site=site)
class PaymentAdmin(ReadOnlyAdmin):
    list_display = ["receipt_number", "account", "purchase", "amount", "provider", "paid_at", "refunded_at"]
    list_filter = ["provider", "currency", ("refunded_at", admin.EmptyFieldListFilter)]
    search_fields = ["provider_ref", "purchase__reference", "account__name"]
    list_select_related = ["account", "purchase"]
    readonly_fields = ["amount"]
    date_hierarchy = "paid_at"
    actions = ["refund"]

    @admin.display(description="Amount", ordering="amount_minor")
    def amount(self, payment: Payment) -> str:
        return _money(payment.amount_minor, payment.currency)

    def has_refund_permission(self, request) -> bool:
        return _may(request, "change", self.opts)

    @admin.action(description="Refund", permissions=["refund"])
    def refund(self, request, queryset):
        for payment in queryset:
            try:
                payment_refund(payment=payment)
            except DomainError as error:
                self.message_user(request, f"{error.detail}.", messages.WARNING)
                continue
            self.message_user(request, f"Refund requested for receipt {payment.receipt_number} "
                                       f"({_money(payment.amount_minor, payment.currency)}); it shows as refunded "
                                       "when the provider confirms.", messages.SUCCESS)


@admin.register(Subscription, site=site)
class SubscriptionAdmin(ReadOnlyAdmin):
    list_display = ["account", "plan_code", "amount", "status", "cancel_at_period_end", "current_period_end",
                    "provider", "created_at"]
    list_filter = ["status", "plan_code", "provider", "cancel_at_period_end", "currency"]
    search_fields = ["provider_ref", "purchase__reference", "account__name"]
    list_select_related = ["account"]
    readonly_fields = ["amount"]
    actions = ["cancel_renewal"]

    @admin.display(description="Amount", ordering="amount_minor")
    def amount(self, subscription: Subscription) -> str:
        return _money(subscription.amount_minor, subscription.currency)

    def has_cancel_permission(self, request) -> bool:
        return _may(request, "change", self.opts)

    @admin.action(description="Cancel at period end", permissions=["cancel"])
    def cancel_renewal(self, request, queryset):
        """The API's change to the Free plan: the provider cancels at the period end and tells us."""
        for subscription in queryset.select_related("account"):
            name = subscription.account.name
            if subscription.cancel_at_period_end or plan_subscription(subscription.account) != subscription:
                self.message_user(request, f"{name}'s {subscription.plan_code} subscription is not running on to a "
                                           "next period; left as it is.", messages.WARNING)
                continue
            try:
                plan_change(account=subscription.account, plan_code="free")
            except DomainError as error:
                self.message_user(request, f"{name}: {error.detail}.", messages.WARNING)
                continue
            self.message_user(request, f"Cancellation requested for {name}'s {subscription.plan_code} subscription: "
                                       f"it ends on {subscription.current_period_end:%d %b %Y} once the provider "
                                       "confirms.", messages.SUCCESS)


@admin.register(ProviderEventRecord, site=site)
class ProviderEventRecordAdmin(ReadOnlyAdmin):
    list_display = ["applied_at", "provider", "kind", "event_id", "reference"]
    list_filter = ["provider", "kind"]
    search_fields = ["event_id", "reference"]
    fields = ["provider", "event_id", "kind", "reference", "applied_at", "payload_pretty"]
    readonly_fields = ["payload_pretty"]
    date_hierarchy = "applied_at"

    @admin.display(description="Payload")
    def payload_pretty(self, record: ProviderEventRecord) -> str:
        return _pretty_json(record.payload)


# the price table: the one thing edited in a form


@admin.register(Price, site=site)
class PriceAdmin(admin.ModelAdmin):
    form = PriceForm
    list_display = ["item", "currency", "amount_minor", "amount", "updated_at"]
    list_filter = ["currency", "item"]
    search_fields = ["item"]
    fields = ["item", "currency", ("amount_minor", "amount"), "updated_at"]

    @admin.display(description="Amount")
    def amount(self, price: Price) -> str:
        return _money(price.amount_minor, price.currency) if price.pk else "-"

    def get_readonly_fields(self, request, obj=None) -> list[str]:
        """What a price is for and its currency are fixed once it exists; only the amount changes."""
        return ["item", "currency", "amount", "updated_at"] if obj else ["amount", "updated_at"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a missing price stops its checkouts (PriceMissing)


@admin.register(Payout, site=site)
class PayoutAdmin(ReadOnlyAdmin):
    """Partners' payout requests: an operator transfers the money (outside, by bank transfer) and marks
    them paid, or rejects them, which releases the reserved amount to the partner's balance. Both go
    through a page with a note for the partner, then billing.services.ledger.payout_decide per payout."""

    list_display = ["partner", "amount", "currency", "status", "created_at", "decided_at", "note"]
    list_filter = ["status", "currency", "created_at"]
    search_fields = ["partner__account__name"]
    list_select_related = ["partner__account"]
    date_hierarchy = "created_at"
    actions = ["mark_paid", "reject"]

    @admin.display(description="Partner", ordering="partner__account__name")
    def partner(self, payout: Payout) -> str:
        return payout.partner.account.name

    @admin.display(description="Amount", ordering="amount_minor")
    def amount(self, payout: Payout) -> str:
        return f"{payout.amount.major:,.2f}"

    def has_decide_permission(self, request) -> bool:
        return _may(request, "change", self.opts)

    @admin.action(description="Mark paid (after the transfer)", permissions=["decide"])
    def mark_paid(self, request, queryset):
        return self._decide(request, queryset, paid=True)

    @admin.action(description="Reject (release the amount)", permissions=["decide"])
    def reject(self, request, queryset):
        return self._decide(request, queryset, paid=False)

    def _decide(self, request, queryset, *, paid: bool):
        """First the decision page (a note); on its submit, the ledger service for each payout."""
        payouts = list(queryset.select_related("partner__account").order_by("created_at", "id"))
        form = PayoutDecisionForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            for payout in payouts:
                self._decide_one(request, payout, paid, form.cleaned_data["note"])
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Mark payouts paid" if paid else "Reject payouts",
            "opts": self.opts,
            "form": form,
            "payouts": payouts,
            "requested": [payout for payout in payouts if payout.status == Payout.Status.REQUESTED],
            "action": "mark_paid" if paid else "reject",
            "paid": paid,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/operator/payout_decision.html", context)

    def _decide_one(self, request, payout: Payout, paid: bool, note: str) -> None:
        name, amount = payout.partner.account.name, _money(payout.amount_minor, payout.currency)
        try:
            payout_decide(payout=payout, paid=paid, note=note)
        except DomainError as error:
            self.message_user(request, f"{name}'s payout of {amount} was not changed: {error.detail}.",
                              messages.WARNING)
            return
        if paid:
            self.message_user(request, f"{name}'s payout of {amount} is marked paid.", messages.SUCCESS)
        else:
            self.message_user(request, f"{name}'s payout of {amount} is rejected; the amount is back in their "
                                       "available balance.", messages.SUCCESS)


@admin.register(RetailPrice, site=site)
class RetailPriceAdmin(ReadOnlyAdmin):
    """What partners charge per pay-as-you-go mailbox and month (set in the portal or the API)."""

    list_display = ["partner", "plan_type", "currency", "amount", "wholesale", "updated_at"]
    list_filter = ["plan_type", "currency"]
    search_fields = ["partner__account__name"]
    list_select_related = ["partner__account"]

    @admin.display(description="Partner", ordering="partner__account__name")
    def partner(self, row: RetailPrice) -> str:
        return row.partner.account.name

    @admin.display(description="Retail price", ordering="amount_minor")
    def amount(self, row: RetailPrice) -> str:
        return _money(row.amount_minor, row.currency)

    @admin.display(description="Wholesale")
    def wholesale(self, row: RetailPrice) -> str:
        return str(wholesale_monthly(row.plan_type, row.currency))


@admin.register(LedgerEntry, site=site)
class LedgerEntryAdmin(ReadOnlyAdmin):
    """Partners' balances, entry by entry: margins, refund debits, payouts reserved and released."""

    list_display = ["partner", "kind", "amount", "description", "created_at"]
    list_filter = ["kind", "currency", "created_at"]
    search_fields = ["partner__account__name", "description"]
    list_select_related = ["partner__account"]
    date_hierarchy = "created_at"

    @admin.display(description="Partner", ordering="partner__account__name")
    def partner(self, entry: LedgerEntry) -> str:
        return entry.partner.account.name

    @admin.display(description="Amount", ordering="amount_minor")
    def amount(self, entry: LedgerEntry) -> str:
        return ("−" if entry.amount_minor < 0 else "") + _money(abs(entry.amount_minor), entry.currency)


from portal.console import quarantine_admin  # noqa: E402,F401  (registers the quarantine and its digest runs)
