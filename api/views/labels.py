"""/labels: the account's labels. Reading needs `mailboxes:read`, changing `mailboxes:write`."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.permissions import request_account
from mailcore.inbox.labels import label_create, label_delete
from mailcore.mailboxes.selectors import label_get, label_list


class LabelOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    color = serializers.CharField()
    created_at = serializers.DateTimeField()


class LabelInput(StrictInput):
    name = serializers.CharField(max_length=64)
    color = serializers.RegexField(r"^#[0-9A-Fa-f]{6}$", max_length=7, help_text="#rrggbb")


class LabelListCreateApi(APIView):
    required_scopes = {"GET": "mailboxes:read", "POST": "mailboxes:write"}

    @extend_schema(tags=["labels"], responses={200: LabelOutput(many=True)}, summary="List labels")
    def get(self, request):
        return Response(LabelOutput(label_list(account=request_account(request)), many=True).data)

    @extend_schema(tags=["labels"], request=LabelInput, responses={201: LabelOutput}, summary="Create a label")
    def post(self, request):
        data = LabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        label = label_create(account=request_account(request), **data.validated_data)
        return Response(LabelOutput(label).data, status=201)


class LabelDetailApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(tags=["labels"], responses={204: None}, summary="Delete a label and remove it from all messages")
    def delete(self, request, label_id: int):
        label_delete(label=label_get(account=request_account(request), label_id=label_id))
        return Response(status=204)
