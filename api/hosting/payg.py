"""/v1/hosting pay-as-you-go: retail prices, a mailbox's subscription (read, cancel, upgrade),
per-mailbox add-ons, and the partner's earnings and payouts (/partners/me/payouts).

Everything that changes a subscription answers at once and takes effect when the payment
provider's signed event confirms it (partner_mailbox.payment_confirmed, .payment_failed, .expired).
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.inputs import ReturnUrlField, StrictInput
from billing.models import LedgerEntry, Payout
from billing.money import Money
from billing.services import ledger, payg
from mailcore.partners.selectors import partner_mailbox_get


@extend_schema_field(OpenApiTypes.NUMBER)
class MoneyField(serializers.Field):
    """A `Money` as the spec's number in major units (the one conversion: Money.as_number)."""

    def to_representation(self, value: Money):
        return value.as_number()


class RetailPriceOutput(serializers.Serializer):
    plan_type = serializers.ChoiceField(choices=["pro", "premium"])
    currency = serializers.ChoiceField(choices=["usd", "ngn"])
    retail_price = MoneyField(help_text="Per mailbox and month, what the customer pays")
    wholesale_price = MoneyField(help_text="Per mailbox and month, what we keep")
    margin = MoneyField(help_text="retail_price minus wholesale_price: credited to you per payment")
    updated_at = serializers.DateTimeField()


# The largest amount in major units a request may name: ten million dollars or naira, far above any
# price or balance, and far below what integer minor units (and a float's exact cents) can hold.
MAX_MAJOR_AMOUNT = 10_000_000


@extend_schema_field({"type": "number", "minimum": 0.01, "maximum": MAX_MAJOR_AMOUNT, "multipleOf": 0.01})
class MajorAmountField(serializers.FloatField):
    """An amount in major units with at most two decimals (billing's to_minor checks them)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0.01, max_value=MAX_MAJOR_AMOUNT, **kwargs)


class RetailPriceInput(StrictInput):
    plan_type = serializers.ChoiceField(choices=["pro", "premium"])
    currency = serializers.ChoiceField(choices=["usd", "ngn"],
                                       help_text="The partner's billing currency (422 for the other one)")
    retail_price = MajorAmountField(help_text="Major units; at least the wholesale rate "
                                          "for that tier and currency (422 names it)")


class HostingRetailPricingApi(HostingApi):
    required_scopes = {"GET": "partner:mailboxes:read", "POST": "partner:settings:write"}

    @extend_schema(tags=["hosting: pay-as-you-go"], responses={200: RetailPriceOutput(many=True)},
                   summary="Retail prices set, with the wholesale rate and margin (scope partner:mailboxes:read)")
    def get(self, request):
        return Response(RetailPriceOutput(payg.retail_prices(partner=self.partner), many=True).data)

    @extend_schema(tags=["hosting: pay-as-you-go"], request=RetailPriceInput, responses={200: RetailPriceOutput},
                   summary="Set a retail price (scope partner:settings:write)",
                   description="422 below the wholesale rate for that plan and currency, naming the rate.")
    def post(self, request):
        data = RetailPriceInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        payg.retail_price_set(partner=self.partner, plan_type=fields["plan_type"], currency=fields["currency"],
                              retail_price=request.data["retail_price"])
        row = next(row for row in payg.retail_prices(partner=self.partner)
                   if (row["plan_type"], row["currency"]) == (fields["plan_type"], fields["currency"]))
        return Response(RetailPriceOutput(row).data)


class PaygSubscriptionOutput(serializers.Serializer):
    mailbox_id = serializers.IntegerField()
    plan_type = serializers.CharField()
    billing_cycle = serializers.CharField(help_text="monthly")
    status = serializers.ChoiceField(choices=["pending_payment", "active", "past_due", "canceled"],
                                     help_text="past_due: a renewal failed, the provider retries; the mailbox is "
                                     "suspended meanwhile")
    currency = serializers.CharField()
    total_price = MoneyField(help_text="Per month, what the customer pays")
    current_period_start = serializers.DateField(allow_null=True)
    current_period_end = serializers.DateField(allow_null=True)
    next_billing_date = serializers.DateField(allow_null=True, help_text="null when it will not renew")
    auto_renew = serializers.BooleanField()
    payment_provider = serializers.CharField()


class _PaygMailboxApi(HostingApi):
    def mailbox(self, mailbox_id: int):
        return partner_mailbox_get(partner=self.partner, mailbox_id=mailbox_id)


class HostingPaygSubscriptionApi(_PaygMailboxApi):
    required_scopes = {"GET": "partner:mailboxes:read"}

    @extend_schema(tags=["hosting: pay-as-you-go"], responses={200: PaygSubscriptionOutput},
                   summary="The mailbox's subscription (400 for a slot-funded mailbox)")
    def get(self, request, mailbox_id: int):
        return Response(PaygSubscriptionOutput(payg.payg_subscription(partner_mailbox=self.mailbox(mailbox_id))).data)


class CancelInput(StrictInput):
    immediate = serializers.BooleanField(default=False, help_text="true ends it now, false at the period end")


class ChangeRequestedOutput(serializers.Serializer):
    status = serializers.CharField(help_text="requested: the change applies when the provider confirms it")
    subscription = PaygSubscriptionOutput()


class HostingPaygCancelApi(_PaygMailboxApi):
    required_scopes = {"POST": "partner:mailboxes:write"}

    @extend_schema(tags=["hosting: pay-as-you-go"], request=CancelInput, responses={200: ChangeRequestedOutput},
                   summary="Cancel the subscription, now or at the period end",
                   description="When the provider confirms, the mailbox is disabled and marked expired "
                   "(partner_mailbox.expired). 400 slot-funded or no running subscription.")
    def post(self, request, mailbox_id: int):
        data = CancelInput(data=request.data)
        data.is_valid(raise_exception=True)
        partner_mailbox = self.mailbox(mailbox_id)
        payg.payg_cancel(partner_mailbox=partner_mailbox, immediate=data.validated_data["immediate"])
        partner_mailbox.refresh_from_db()
        return Response({"status": "requested",
                         "subscription": PaygSubscriptionOutput(payg.payg_subscription(
                             partner_mailbox=partner_mailbox)).data})


class UpgradeInput(StrictInput):
    new_plan_type = serializers.ChoiceField(choices=["pro", "premium"], help_text="Must differ from the current plan")


class HostingPaygUpgradeApi(_PaygMailboxApi):
    required_scopes = {"POST": "partner:mailboxes:write"}

    @extend_schema(tags=["hosting: pay-as-you-go"], request=UpgradeInput, responses={200: ChangeRequestedOutput},
                   summary="Change the mailbox's plan (prorated by the provider)",
                   description="The new plan and its storage quota apply when the provider confirms. 400 the same "
                   "plan, slot-funded, or no running subscription; 400 no retail price for the new plan.")
    def post(self, request, mailbox_id: int):
        partner_mailbox = self.mailbox(mailbox_id)  # another partner's mailbox is 404 whatever the body
        data = UpgradeInput(data=request.data)
        data.is_valid(raise_exception=True)
        payg.payg_upgrade(partner_mailbox=partner_mailbox, new_plan_type=data.validated_data["new_plan_type"])
        return Response({"status": "requested",
                         "subscription": PaygSubscriptionOutput(payg.payg_subscription(
                             partner_mailbox=partner_mailbox)).data})


class MailboxAddonInput(StrictInput):
    type = serializers.ChoiceField(choices=list(payg.ADDON_TYPES),
                                   help_text="extra_storage: GB for this mailbox; extra_mailbox: prepaid slots of "
                                   "this mailbox's plan (one month each) for more mailboxes")
    quantity = serializers.IntegerField(min_value=1, max_value=100, default=1)
    return_url = ReturnUrlField()


class MailboxAddonOutput(serializers.Serializer):
    payment_method_id = serializers.IntegerField(help_text="The purchase's id")
    reference = serializers.CharField(help_text="For POST /v1/hosting/addons/purchase/verify")
    checkout_url = serializers.URLField()
    status = serializers.CharField(help_text="pending_payment")


class HostingPaygAddonApi(_PaygMailboxApi):
    required_scopes = {"POST": "partner:mailboxes:write"}

    @extend_schema(tags=["hosting: pay-as-you-go"], request=MailboxAddonInput, responses={200: MailboxAddonOutput},
                   summary="Buy an add-on for a pay-as-you-go mailbox (one-off checkout)")
    def post(self, request, mailbox_id: int):
        partner_mailbox = self.mailbox(mailbox_id)  # another partner's mailbox is 404 whatever the body
        data = MailboxAddonInput(data=request.data)
        data.is_valid(raise_exception=True)
        purchase = payg.payg_addon_purchase(partner_mailbox=partner_mailbox, **data.validated_data)
        return Response({"payment_method_id": purchase.pk, "reference": purchase.reference,
                         "checkout_url": purchase.checkout_url, "status": "pending_payment"})


# earnings and payouts


class BalanceOutput(serializers.Serializer):
    currency = serializers.CharField()
    available = MoneyField(help_text="Earned and not yet requested")
    reserved = MoneyField(help_text="Held by open payout requests")
    paid_out = MoneyField(help_text="Paid to you in total")


class LedgerEntryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=LedgerEntry.Kind.values)
    amount = serializers.SerializerMethodField(help_text="Positive credits you, negative debits")
    currency = serializers.CharField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()

    def get_amount(self, entry) -> float:
        return Money(int(entry.amount_minor), entry.currency).as_number()


class PayoutOutput(serializers.Serializer):
    id = serializers.IntegerField()
    amount = serializers.SerializerMethodField()
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=Payout.Status.values)
    note = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)

    def get_amount(self, payout) -> float:
        return Money(int(payout.amount_minor), payout.currency).as_number()


class PayoutsOutput(serializers.Serializer):
    balances = BalanceOutput(many=True)
    payouts = PayoutOutput(many=True, help_text="The 20 most recent requests")
    entries = LedgerEntryOutput(many=True, help_text="The 50 most recent ledger entries")


class PayoutInput(StrictInput):
    amount = MajorAmountField(help_text="Major units; at most the available balance and at "
                                    "least the minimum ($20 or ₦5,000)")
    currency = serializers.ChoiceField(choices=["usd", "ngn"],
                                       help_text="The partner's billing currency (422 for the other one)")


class PartnerPayoutsApi(HostingApi):
    required_scopes = {"GET": "partner:stats:read", "POST": "partner:settings:write"}

    def _state(self):
        partner = self.partner
        return {"balances": ledger.balances(partner=partner), "payouts": partner.payouts.all()[:20],
                "entries": partner.ledger.all()[:50]}

    @extend_schema(tags=["hosting: earnings"], responses={200: PayoutsOutput},
                   summary="Balances per currency, payouts and recent ledger entries (scope partner:stats:read)")
    def get(self, request):
        return Response(PayoutsOutput(self._state()).data)

    @extend_schema(tags=["hosting: earnings"], request=PayoutInput, responses={201: PayoutOutput},
                   summary="Request a payout (scope partner:settings:write)",
                   description="Reserves the amount from the available balance; an operator pays or rejects it "
                   "(rejection releases it). 422 above the available balance or below the minimum.")
    def post(self, request):
        data = PayoutInput(data=request.data)
        data.is_valid(raise_exception=True)
        currency = data.validated_data["currency"]
        minor = payg.to_minor(request.data["amount"], "amount")
        payout = ledger.payout_request(partner=self.partner, amount_minor=minor, currency=currency)
        return Response(PayoutOutput(payout).data, status=201)
