"""/v1/hosting purchases: slot pools and add-ons (domain slots, storage), their pricing and status.

Each purchase answers with a checkout_url and a reference at once; what it buys is granted only when
the payment provider's signed event confirms it (`partner_pool.purchased`, `partner_addon.purchased`).
"""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.inputs import ReturnUrlField, StrictInput
from billing.models import Purchase
from billing.money import Money
from billing.selectors.history import partner_slot_pool
from billing.selectors.prices import price
from billing.services import partners as billing

ADDON_TYPES = {Purchase.Kind.DOMAIN_SLOT: "domain_slot", Purchase.Kind.STORAGE: "storage"}


class PurchaseOutput(serializers.Serializer):
    reference = serializers.CharField()
    status = serializers.ChoiceField(choices=Purchase.Status.values,
                                     help_text="pending until the provider confirms; then paid, failed or expired")
    checkout_url = serializers.URLField(help_text="Send the buyer here to pay")
    kind = serializers.ChoiceField(choices=["slot_pool", "domain_slot", "storage"])
    addon_type = serializers.SerializerMethodField(help_text="domain_slot or storage; null for slot pools")
    plan_type = serializers.SerializerMethodField(help_text="Slot pools: pro or premium; null for add-ons")
    quantity = serializers.IntegerField(help_text="Slots, domain slots or GB")
    months = serializers.IntegerField(help_text="Slot pools: months each slot funds")
    amount = serializers.SerializerMethodField(help_text="Total, in major units of currency")
    currency = serializers.CharField()
    payment_method = serializers.CharField()
    payment_provider = serializers.CharField(source="provider")
    created_at = serializers.DateTimeField()
    paid_at = serializers.DateTimeField(allow_null=True)

    def get_addon_type(self, purchase) -> str | None:
        return ADDON_TYPES.get(purchase.kind)

    def get_plan_type(self, purchase) -> str | None:
        return purchase.item if purchase.kind == Purchase.Kind.SLOT_POOL else None

    def get_amount(self, purchase) -> float:
        return Money(int(purchase.amount_minor), purchase.currency).as_number()


class AddonPricingOutput(serializers.Serializer):
    currency_code = serializers.CharField()
    domain_slot_unit_price = serializers.FloatField()
    storage_gb_unit_price = serializers.FloatField()
    domain_limit = serializers.IntegerField()
    domains_used = serializers.IntegerField()
    extra_storage_mb = serializers.IntegerField()

    def to_representation(self, pricing):
        money = ("domain_slot_unit_price", "storage_gb_unit_price")
        return super().to_representation({**pricing, **{key: pricing[key].as_number() for key in money}})


class AddonPurchaseInput(StrictInput):
    addon_type = serializers.ChoiceField(choices=["domain_slot", "storage"])
    quantity = serializers.IntegerField(min_value=1, max_value=billing.MAX_QUANTITY, help_text="Slots or GB")
    payment_method = serializers.ChoiceField(choices=Purchase.Method.values, default="card",
                                             help_text="bank_transfer only for NGN accounts (400 otherwise)")
    return_url = ReturnUrlField(help_text="Where the provider's checkout returns the buyer")


class PoolPurchaseInput(StrictInput):
    plan_type = serializers.ChoiceField(choices=["pro", "premium"])
    quantity = serializers.IntegerField(min_value=1, max_value=billing.MAX_QUANTITY, help_text="Slots")
    months = serializers.IntegerField(min_value=1, max_value=billing.MAX_MONTHS, default=1,
                                      help_text="Months of mailbox each slot funds (one term)")
    payment_method = serializers.ChoiceField(choices=Purchase.Method.values, default="card",
                                             help_text="bank_transfer only for NGN accounts (400 otherwise)")
    return_url = ReturnUrlField(help_text="Where the provider's checkout returns the buyer")


class VerifyInput(StrictInput):
    reference = serializers.CharField(max_length=40)


class PoolPlanOutput(serializers.Serializer):
    unused = serializers.IntegerField()
    assigned = serializers.IntegerField()
    expired = serializers.IntegerField()
    slot_unit_price = serializers.FloatField(help_text="Per slot and month, in currency")


class PoolOutput(serializers.Serializer):
    currency = serializers.CharField()
    pro = PoolPlanOutput()
    premium = PoolPlanOutput()
    any_plan = PoolPlanOutput(help_text="Slots granted for any plan (no price)")


class HostingAddonPricingApi(HostingApi):
    required_scopes = {"GET": "partner:addons:read"}

    @extend_schema(tags=["hosting: add-ons"], responses={200: AddonPricingOutput},
                   summary="Add-on prices in the account's currency, and the limits they raise")
    def get(self, request):
        return Response(AddonPricingOutput(billing.addon_pricing(partner=self.partner)).data)


class HostingAddonPurchaseApi(HostingApi):
    required_scopes = {"POST": "partner:addons:write"}

    @extend_schema(tags=["hosting: add-ons"], request=AddonPurchaseInput, responses={201: PurchaseOutput},
                   summary="Buy domain slots or storage: returns a checkout to pay",
                   description="The domain limit or extra storage grows once the provider confirms the payment "
                   "(event partner_addon.purchased). 400 bank_transfer on a USD account; 502 the provider did not "
                   "answer (nothing created); 422 field errors.")
    def post(self, request):
        data = AddonPurchaseInput(data=request.data)
        data.is_valid(raise_exception=True)
        purchase = billing.addon_purchase_start(partner=self.partner, **data.validated_data)
        return Response(PurchaseOutput(purchase).data, status=201)


class HostingPurchaseVerifyApi(HostingApi):
    required_scopes = {"POST": "partner:addons:read"}

    @extend_schema(tags=["hosting: add-ons"], request=VerifyInput, responses={200: PurchaseOutput},
                   summary="A purchase's status by reference (add-ons and slot pools)",
                   description="Re-checks a pending purchase with the provider. 404 unknown or another account's "
                   "reference.")
    def post(self, request):
        data = VerifyInput(data=request.data)
        data.is_valid(raise_exception=True)
        purchase = billing.purchase_status(partner=self.partner, reference=data.validated_data["reference"])
        return Response(PurchaseOutput(purchase).data)


class HostingSlotPoolApi(HostingApi):
    required_scopes = {"GET": "partner:mailboxes:read"}

    @extend_schema(tags=["hosting: slot pools"], responses={200: PoolOutput},
                   summary="The slot pool by plan, with the slot prices")
    def get(self, request):
        partner = self.partner
        counts = {row["plan_type"]: row for row in partner_slot_pool(partner=partner)}
        currency = partner.billing_currency

        def plan(code: str, priced: bool) -> dict:
            row = counts.get(code, {})
            return {"unused": row.get("unused", 0), "assigned": row.get("assigned", 0),
                    "expired": row.get("expired", 0),
                    "slot_unit_price": price(f"slot:{code}", currency).as_number() if priced else 0}

        return Response(PoolOutput({"currency": currency, "pro": plan("pro", True), "premium": plan("premium", True),
                                    "any_plan": plan("", False)}).data)


class HostingSlotPurchaseApi(HostingApi):
    required_scopes = {"POST": "partner:addons:write"}

    @extend_schema(tags=["hosting: slot pools"], request=PoolPurchaseInput, responses={201: PurchaseOutput},
                   summary="Buy a slot pool: returns a checkout to pay",
                   description="quantity slots of plan_type, each funding one mailbox for `months` months (or one "
                   "renewal term). Slots are granted once, when the provider confirms the payment (event "
                   "partner_pool.purchased); the first pool makes a trial partner active. 400 bank_transfer on a "
                   "USD account; 502 the provider did not answer (nothing created); 422 field errors.")
    def post(self, request):
        data = PoolPurchaseInput(data=request.data)
        data.is_valid(raise_exception=True)
        purchase = billing.pool_purchase_start(partner=self.partner, **data.validated_data)
        return Response(PurchaseOutput(purchase).data, status=201)
