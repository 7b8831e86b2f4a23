"""/webhooks: endpoint management, deliveries, test, retry and replay. Premium plan only.

A session works, and so does an API key with scope `webhooks`, so that automation platforms can
subscribe and unsubscribe by themselves (REST hooks); see docs/decisions.md.
"""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import HttpsUrlField, IpField, StrictInput
from api.permissions import request_account
from mailcore.events.catalog import EVENTS
from mailcore.webhooks.selectors import delivery_get, delivery_list, endpoint_get, endpoint_list
from mailcore.webhooks.services import (
    delivery_replay,
    delivery_retry,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_test,
    endpoint_update,
)


class EndpointOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    allowed_ips = serializers.ListField(child=serializers.CharField(), allow_null=True)
    is_active = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class EndpointWithSecretOutput(EndpointOutput):
    secret = serializers.CharField(help_text="The signing secret. Shown only in this response.")


class EndpointCreateInput(StrictInput):
    url = HttpsUrlField(help_text="An https URL")
    events = serializers.ListField(child=serializers.ChoiceField(choices=sorted(EVENTS)), min_length=1)
    allowed_ips = serializers.ListField(child=IpField(), required=False, allow_null=True)


class EndpointUpdateInput(StrictInput):
    is_active = serializers.BooleanField(required=False, help_text="false pauses delivery")
    allowed_ips = serializers.ListField(child=IpField(), required=False, allow_null=True,
                                        help_text="Replaces the list; [] or null clears it.")

    def validate(self, attrs):
        frozen = sorted(set(self.initial_data) & {"url", "events", "secret"})
        if frozen:
            raise serializers.ValidationError(
                {field: ["cannot change; delete the endpoint and create a new one"] for field in frozen})
        return attrs


class DeliveryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    event = serializers.CharField(source="event.name")
    event_id = serializers.IntegerField()
    status = serializers.CharField(help_text="pending, delivered, failed (refused before sending) or dead")
    attempts = serializers.IntegerField()
    response_status = serializers.IntegerField(allow_null=True)
    response_body = serializers.CharField(help_text="The first 4 KB of the endpoint's answer")
    last_error = serializers.CharField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
    replayed_from_id = serializers.IntegerField(allow_null=True)
    data = serializers.JSONField(source="event.data")


class TestResultOutput(serializers.Serializer):
    delivered = serializers.BooleanField(source="ok")
    response_status = serializers.IntegerField(source="status", allow_null=True)
    response_body = serializers.CharField(source="body")
    error = serializers.CharField()


class DeliveriesQuery(serializers.Serializer):
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class _WebhookApi(APIView):
    required_scopes = "webhooks"
    required_feature = "webhooks"

    def endpoint(self, request, webhook_id: int):
        return endpoint_get(account=request_account(request), endpoint_id=webhook_id)


class WebhookListCreateApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], responses={200: EndpointOutput(many=True)},
                   summary="List webhook endpoints (never their secrets)")
    def get(self, request):
        return Response(EndpointOutput(endpoint_list(account=request_account(request)), many=True).data)

    @extend_schema(tags=["webhooks"], request=EndpointCreateInput, responses={201: EndpointWithSecretOutput},
                   summary="Create a webhook endpoint; the secret is returned once")
    def post(self, request):
        data = EndpointCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint, secret = endpoint_create(account=request_account(request), **data.validated_data)
        return Response(EndpointWithSecretOutput({**EndpointOutput(endpoint).data, "secret": secret}).data, status=201)


class WebhookDetailApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], responses={200: EndpointOutput}, summary="Fetch a webhook endpoint")
    def get(self, request, webhook_id: int):
        return Response(EndpointOutput(self.endpoint(request, webhook_id)).data)

    @extend_schema(tags=["webhooks"], request=EndpointUpdateInput, responses={200: EndpointOutput},
                   summary="Pause or resume, or replace allowed_ips (url and events cannot change)")
    def patch(self, request, webhook_id: int):
        endpoint = self.endpoint(request, webhook_id)
        data = EndpointUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(EndpointOutput(endpoint_update(endpoint=endpoint, **data.validated_data)).data)

    @extend_schema(tags=["webhooks"], responses={204: None}, summary="Delete a webhook endpoint (unsubscribe)")
    def delete(self, request, webhook_id: int):
        endpoint_delete(endpoint=self.endpoint(request, webhook_id))
        return Response(status=204)


class WebhookRotateSecretApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], request=None, responses={200: EndpointWithSecretOutput},
                   summary="Rotate the signing secret; the new one is returned once")
    def post(self, request, webhook_id: int):
        endpoint = self.endpoint(request, webhook_id)
        secret = endpoint_rotate_secret(endpoint=endpoint)
        return Response(EndpointWithSecretOutput({**EndpointOutput(endpoint).data, "secret": secret}).data)


class WebhookTestApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], request=None, responses={200: TestResultOutput},
                   summary="Send a sample email.received now, bypassing the queue, and report the answer")
    def post(self, request, webhook_id: int):
        return Response(TestResultOutput(endpoint_test(endpoint=self.endpoint(request, webhook_id))).data)


class WebhookDeliveriesApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], parameters=[DeliveriesQuery], responses={200: DeliveryOutput(many=True)},
                   summary="Recent deliveries, newest first")
    def get(self, request, webhook_id: int):
        endpoint = self.endpoint(request, webhook_id)
        query = DeliveriesQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(DeliveryOutput(delivery_list(endpoint=endpoint, limit=query.validated_data["limit"]),
                                       many=True).data)


class WebhookDeliveryRetryApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], request=None, responses={200: DeliveryOutput},
                   summary="One fresh attempt for a dead or failed delivery (400 otherwise)")
    def post(self, request, webhook_id: int, delivery_id: int):
        delivery = delivery_get(endpoint=self.endpoint(request, webhook_id), delivery_id=delivery_id)
        return Response(DeliveryOutput(delivery_retry(delivery=delivery)).data)


class WebhookDeliveryReplayApi(_WebhookApi):
    @extend_schema(tags=["webhooks"], request=None, responses={201: DeliveryOutput},
                   summary="Deliver the same event again as a new delivery (replayed_from_id)")
    def post(self, request, webhook_id: int, delivery_id: int):
        delivery = delivery_get(endpoint=self.endpoint(request, webhook_id), delivery_id=delivery_id)
        return Response(DeliveryOutput(delivery_replay(delivery=delivery)).data, status=201)
