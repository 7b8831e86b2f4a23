"""GET /subscriptions/me: the caller's plan, its features and quotas, and the subscription behind it.
POST /subscriptions/me/plan: change plan (a checkout from Free; a provider-side change otherwise)."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from api.authentication import SESSION_ONLY

from api.inputs import ReturnUrlField, StrictInput
from api.permissions import request_account
from billing.money import Money
from billing.services.plans import plan_change, plan_subscription


class QuotasOutput(serializers.Serializer):
    sends_per_day = serializers.IntegerField()
    sends_per_hour = serializers.IntegerField()
    storage_mb = serializers.IntegerField()
    ai_requests_per_day = serializers.IntegerField(allow_null=True, help_text="null means unlimited")
    attachment_max_mb = serializers.IntegerField()


class PlanSubscriptionOutput(serializers.Serializer):
    plan = serializers.CharField(source="plan_code", help_text="The plan the subscription pays for")
    status = serializers.ChoiceField(choices=["active", "past_due", "canceled"],
                                     help_text="past_due: a renewal failed and the provider is retrying")
    current_period_start = serializers.DateTimeField()
    current_period_end = serializers.DateTimeField()
    cancel_at_period_end = serializers.BooleanField(help_text="Drops to Free at current_period_end")
    amount = serializers.SerializerMethodField(help_text="Monthly, in major units of currency")
    currency = serializers.CharField()
    payment_provider = serializers.CharField(source="provider")

    def get_amount(self, subscription) -> float:
        return Money(int(subscription.amount_minor), subscription.currency).as_number()


class SubscriptionOutput(serializers.Serializer):
    plan = serializers.CharField(help_text="free, pro or premium: the confirmed plan the gates follow")
    plan_name = serializers.CharField()
    features = serializers.DictField(child=serializers.BooleanField())
    quotas = QuotasOutput()
    hosting_partner_status = serializers.CharField(allow_null=True)
    subscription = PlanSubscriptionOutput(allow_null=True, help_text="null on Free")


class PlanChangeInput(StrictInput):
    plan = serializers.ChoiceField(choices=["free", "pro", "premium"])
    return_url = ReturnUrlField(required=False, help_text="Required when a checkout is needed (from Free)")
    currency = serializers.ChoiceField(choices=["usd", "ngn"], default="usd",
                                       help_text="For a new subscription; a running one keeps its currency")


class PlanChangeOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["checkout", "requested"],
                                     help_text="checkout: pay at checkout_url; requested: the provider is changing "
                                     "the subscription and the plan follows its confirmation")
    reference = serializers.CharField(allow_null=True)
    checkout_url = serializers.URLField(allow_null=True)


class SubscriptionMeApi(APIView):
    @extend_schema(
        tags=["account"],
        responses={200: SubscriptionOutput},
        summary="The account's plan, features, quotas and subscription",
        description="Any valid API key (whatever its scopes) or session.",
    )
    def get(self, request):
        account = request_account(request)
        partner = getattr(account, "partner", None)
        return Response(
            SubscriptionOutput(
                {
                    "plan": account.plan.code,
                    "plan_name": account.plan.name,
                    "features": account.plan.features,
                    "quotas": account.plan.quotas,
                    "hosting_partner_status": partner.status if partner else None,
                    "subscription": plan_subscription(account),
                }
            ).data
        )


class SubscriptionPlanApi(APIView):
    authentication_classes = SESSION_ONLY  # money moves: never from an API key
    permission_classes = [IsAuthenticated]

    @extend_schema(
        tags=["account"], request=PlanChangeInput, responses={200: PlanChangeOutput},
        summary="Upgrade or downgrade the account's plan (session only, not an API key)",
        description="From Free: a monthly subscription checkout (return_url required; 422 without it). Between paid "
        "plans: the subscription's price changes at the provider. To Free: canceled at the period end. The plan "
        "changes only when the provider confirms (watch GET /subscriptions/me). 400 already on that plan; 502 the "
        "provider did not answer.",
    )
    def post(self, request):
        data = PlanChangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        account = request_account(request)
        fields = data.validated_data
        if fields["plan"] != "free" and plan_subscription(account) is None and not fields.get("return_url"):
            raise serializers.ValidationError({"return_url": ["required to pay for a new subscription"]})
        purchase = plan_change(account=account, plan_code=fields["plan"], return_url=fields.get("return_url", ""),
                               currency=fields["currency"])
        if purchase is None:
            return Response({"status": "requested", "reference": None, "checkout_url": None})
        return Response({"status": "checkout", "reference": purchase.reference, "checkout_url": purchase.checkout_url})
