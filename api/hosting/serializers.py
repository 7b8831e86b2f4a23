"""Output records of the hosting partner API, as the spec's resource tables."""
from django.db.models import Prefetch, QuerySet
from rest_framework import serializers

from billing.models import Purchase
from billing.selectors.prices import wholesale_monthly
from billing.services.payg import open_checkout, payg_checkout_url
from mailcore.domains.services import domain_public_records


class DnsRecordOutput(serializers.Serializer):
    type = serializers.CharField()
    host = serializers.CharField()
    value = serializers.CharField()
    description = serializers.CharField()
    ok = serializers.BooleanField(allow_null=True)
    found_value = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)


class DomainOutput(serializers.Serializer):
    id = serializers.IntegerField()
    domain_name = serializers.CharField(source="name")
    client_id = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    is_verified = serializers.BooleanField()
    mailserver_added = serializers.BooleanField()
    verified_at = serializers.DateTimeField(required=False, help_text="Present once verified")
    dns_records = DnsRecordOutput(many=True, allow_null=True)
    alias_of = serializers.IntegerField(source="alias_of_id", allow_null=True, help_text=(
        "The domain this one is an alias of: x@this domain reaches x@that domain once both are verified"))
    catch_all = serializers.SerializerMethodField(help_text=(
        "The mailbox that gets mail to unknown local parts, or null (they are refused)"))
    tracking_host = serializers.CharField(allow_null=True, help_text=(
        "track.<domain> once its CNAME to the platform's tracking host was seen: tracked links and open "
        "pixels of mail from this domain point there; null: the platform's host"))

    def get_catch_all(self, domain) -> str | None:
        return domain.catch_all.address if domain.catch_all_id else None

    def to_representation(self, domain):
        data = super().to_representation(domain)
        if domain.verified_at is None:
            data.pop("verified_at", None)
        data["dns_records"] = domain_public_records(domain)
        return data


class ClientOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    lapse_action_override = serializers.CharField(allow_null=True)
    domain_count = serializers.IntegerField()
    mailbox_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class PartnerMailboxOutput(serializers.Serializer):
    id = serializers.IntegerField()
    email_address = serializers.CharField(source="mailbox.address")
    domain = serializers.CharField(source="mailbox.domain.name")
    plan_type = serializers.CharField()
    status = serializers.CharField()
    is_trial = serializers.BooleanField()
    monthly_rate_usd = serializers.FloatField(
        required=False, help_text="Present when the partner bills in USD: the plan's wholesale monthly rate")
    monthly_rate_ngn = serializers.FloatField(
        required=False, help_text="Present when the partner bills in NGN: the plan's wholesale monthly rate")
    expires_at = serializers.DateTimeField()
    mailserver_provisioned = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    is_pay_as_you_go = serializers.BooleanField(required=False, help_text="Present for pay-as-you-go mailboxes")
    checkout_url = serializers.URLField(required=False, help_text="Present while status is pending_payment")

    def to_representation(self, partner_mailbox):
        data = super().to_representation(partner_mailbox)
        currency = self._partner_currency(partner_mailbox)
        data[f"monthly_rate_{currency}"] = self._rate(partner_mailbox.plan_type, currency)
        if partner_mailbox.funding_mode != "pay_as_you_go":
            data.pop("is_pay_as_you_go", None)
            data.pop("checkout_url", None)
            return data
        data["is_pay_as_you_go"] = True
        url = self._checkout_url(partner_mailbox) if partner_mailbox.status == "pending_payment" else None
        if url:
            data["checkout_url"] = url
        else:
            data.pop("checkout_url", None)
        return data

    def _checkout_url(self, partner_mailbox) -> str | None:
        if self.context.get("fresh_checkout"):
            return payg_checkout_url(partner_mailbox=partner_mailbox)
        if hasattr(partner_mailbox, "open_checkouts"):  # a list: with_open_checkouts read them all at once
            return partner_mailbox.open_checkouts[0].checkout_url if partner_mailbox.open_checkouts else None
        return getattr(open_checkout(partner_mailbox), "checkout_url", None)

    def _partner_currency(self, partner_mailbox) -> str:
        """The partner's billing currency, read once per partner per response: it sees prices only in it."""
        cache = self.root.__dict__.setdefault("_partner_currencies", {})
        if partner_mailbox.partner_id not in cache:
            cache[partner_mailbox.partner_id] = partner_mailbox.partner.billing_currency
        return cache[partner_mailbox.partner_id]

    def _rate(self, plan_type: str, currency: str) -> float:
        """From the price table, read once per response (a list shares the root's cache)."""
        cache = self.root.__dict__.setdefault("_wholesale_rates", {})
        if (plan_type, currency) not in cache:
            cache[plan_type, currency] = wholesale_monthly(plan_type, currency).as_number()
        return cache[plan_type, currency]

    def get_mailserver_provisioned(self, obj) -> bool:
        """Dovecot and Postfix read the account from our tables: it exists once the row does."""
        return obj.mailbox_id is not None


def with_open_checkouts(rows: QuerySet) -> QuerySet:
    """The open checkouts of a list's pay-as-you-go mailboxes in one query, not one per mailbox (the
    same rows billing's open_checkout reads, newest first)."""
    pending = Purchase.objects.filter(kind=Purchase.Kind.MAILBOX, status=Purchase.Status.PENDING)
    return rows.prefetch_related(Prefetch("purchases", queryset=pending, to_attr="open_checkouts"))


class SettingsOutput(serializers.Serializer):
    default_client_lapse_action = serializers.CharField()


class PendingDomainOutput(serializers.Serializer):
    domain_id = serializers.IntegerField()
    domain_name = serializers.CharField()
    status = serializers.CharField()
    dns_records = DnsRecordOutput(many=True, allow_null=True)


class StatsOutput(serializers.Serializer):
    mailboxes_total = serializers.IntegerField()
    mailboxes_by_status = serializers.DictField(child=serializers.IntegerField())
    mailboxes_by_plan = serializers.DictField(child=serializers.IntegerField())
    slots_unused = serializers.IntegerField()
    slots_assigned = serializers.IntegerField()
    slots_expired = serializers.IntegerField()
    domains_total = serializers.IntegerField()
    domains_verified = serializers.IntegerField()
    domains_pending = serializers.IntegerField(help_text="Added, not checked yet or still being re-checked")
    domains_failed = serializers.IntegerField(help_text="Their last DNS check failed (pending + failed + verified "
                                              "= total)")
    domain_limit = serializers.IntegerField()
    extra_storage_mb = serializers.IntegerField()
    pending_domain_setup = PendingDomainOutput(many=True)


class SummaryOutput(serializers.Serializer):
    account_name = serializers.CharField()
    status = serializers.CharField()
    trial_ends_at = serializers.DateTimeField(allow_null=True)
    default_client_lapse_action = serializers.CharField()
    clients_total = serializers.IntegerField()
    domains_total = serializers.IntegerField()
    domains_verified = serializers.IntegerField()
    domain_limit = serializers.IntegerField()
    mailboxes_total = serializers.IntegerField()
    mailboxes_active = serializers.IntegerField()
    mailboxes_trial = serializers.IntegerField()
    slots_unused = serializers.IntegerField()
    extra_storage_mb = serializers.IntegerField()
