"""GET /subscriptions/me: the caller's plan with its features and quotas."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import request_account


class QuotasOutput(serializers.Serializer):
    sends_per_day = serializers.IntegerField()
    sends_per_hour = serializers.IntegerField()
    storage_mb = serializers.IntegerField()
    ai_requests_per_day = serializers.IntegerField(allow_null=True, help_text="null means unlimited")
    attachment_max_mb = serializers.IntegerField()


class SubscriptionOutput(serializers.Serializer):
    plan = serializers.CharField(help_text="free, pro or premium")
    plan_name = serializers.CharField()
    features = serializers.DictField(child=serializers.BooleanField())
    quotas = QuotasOutput()
    hosting_partner_status = serializers.CharField(allow_null=True)


class SubscriptionMeApi(APIView):
    @extend_schema(
        tags=["account"],
        responses={200: SubscriptionOutput},
        summary="The account's plan, features and quotas",
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
                }
            ).data
        )
