"""/api-keys: scoped API keys, managed with a session (never with an API key)."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import IpField, StrictInput
from api.authentication import SESSION_ONLY
from api.permissions import request_account
from mailcore.apikeys.scopes import ALL_SCOPES
from mailcore.apikeys.selectors import api_key_get, api_key_list, api_key_usage
from mailcore.apikeys.services import api_key_create, api_key_revoke, api_key_update


class ApiKeyOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    key_prefix = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    allowed_ips = serializers.ListField(child=serializers.CharField(), allow_null=True)
    blocked_ips = serializers.ListField(child=serializers.CharField(), allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    is_active = serializers.BooleanField()


class ApiKeyCreatedOutput(ApiKeyOutput):
    key = serializers.CharField(help_text="The full key. Shown only in this response; store it now.")


class IpList(serializers.ListField):
    child = IpField()


class ApiKeyCreateInput(StrictInput):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=sorted(ALL_SCOPES)), required=False, min_length=1)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    allowed_ips = IpList(required=False, allow_null=True)
    blocked_ips = IpList(required=False, allow_null=True)


class ApiKeyUpdateInput(StrictInput):
    allowed_ips = IpList(required=False, allow_null=True, help_text="Replaces the list; [] clears it.")
    blocked_ips = IpList(required=False, allow_null=True, help_text="Replaces the list; [] clears it.")
    is_active = serializers.BooleanField(required=False, help_text="false revokes the key for good.")

    refused = {field: "cannot change after creation" for field in ("name", "scopes", "expires_at", "key", "key_prefix")}


class UsageDay(serializers.Serializer):
    date = serializers.DateField()
    count = serializers.IntegerField()


class ApiKeyUsageOutput(serializers.Serializer):
    today = serializers.IntegerField()
    last_7_days = serializers.IntegerField()
    last_30_days = serializers.IntegerField()
    daily = UsageDay(many=True)


class _SessionApi(APIView):
    authentication_classes = SESSION_ONLY
    permission_classes = [IsAuthenticated]


class ApiKeyListCreateApi(_SessionApi):
    @extend_schema(tags=["api keys"], responses={200: ApiKeyOutput(many=True)}, summary="List API keys")
    def get(self, request):
        return Response(ApiKeyOutput(api_key_list(account=request_account(request)), many=True).data)

    @extend_schema(
        tags=["api keys"],
        request=ApiKeyCreateInput,
        responses={201: ApiKeyCreatedOutput},
        summary="Create an API key",
        description="Scopes default to [\"send\"]. Partner scopes need a hosting partner account. "
        "The blocklist is checked before the allowlist.",
    )
    def post(self, request):
        data = ApiKeyCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        key, raw = api_key_create(account=request_account(request), created_by=request.user, **data.validated_data)
        return Response(ApiKeyCreatedOutput({**ApiKeyOutput(key).data, "key": raw}).data, status=201)


class ApiKeyDetailApi(_SessionApi):
    @extend_schema(tags=["api keys"], responses={200: ApiKeyOutput}, summary="Fetch an API key")
    def get(self, request, key_id: int):
        return Response(ApiKeyOutput(api_key_get(account=request_account(request), key_id=key_id)).data)

    @extend_schema(
        tags=["api keys"],
        request=ApiKeyUpdateInput,
        responses={200: ApiKeyOutput},
        summary="Update an API key's address lists or revoke it",
    )
    def patch(self, request, key_id: int):
        key = api_key_get(account=request_account(request), key_id=key_id)
        data = ApiKeyUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(ApiKeyOutput(api_key_update(key=key, **data.validated_data)).data)

    @extend_schema(tags=["api keys"], responses={204: None}, summary="Revoke an API key (soft delete)")
    def delete(self, request, key_id: int):
        api_key_revoke(key=api_key_get(account=request_account(request), key_id=key_id))
        return Response(status=204)


class ApiKeyUsageApi(_SessionApi):
    @extend_schema(tags=["api keys"], responses={200: ApiKeyUsageOutput}, summary="Request counts of an API key")
    def get(self, request, key_id: int):
        key = api_key_get(account=request_account(request), key_id=key_id)
        return Response(ApiKeyUsageOutput(api_key_usage(key=key)).data)
