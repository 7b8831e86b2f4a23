"""/domains: the account's own domains and the DNS records each needs (`domains:read`). A hosting
partner's client domains are managed under /v1/hosting/domains; these are the same rows, read-only."""
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import request_account
from mailcore.domains.selectors import account_domain_get, account_domains
from mailcore.domains.services import domain_records


class AccountDnsRecordOutput(serializers.Serializer):
    key = serializers.CharField(help_text="mx, ownership, spf, dmarc or dkim")
    type = serializers.CharField()
    host = serializers.CharField(help_text='"@" is the domain itself')
    value = serializers.CharField()
    description = serializers.CharField()
    required = serializers.BooleanField(help_text="MX and ownership decide verification; the rest matter for delivery")
    ok = serializers.BooleanField(allow_null=True, help_text="The last check's finding; null before any check")
    found_value = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)


class AccountDomainOutput(serializers.Serializer):
    id = serializers.IntegerField()
    domain_name = serializers.CharField(source="name")
    status = serializers.CharField(help_text="pending, verified or failed")
    is_verified = serializers.BooleanField()
    verified_at = serializers.DateTimeField(allow_null=True)
    dns_records = serializers.SerializerMethodField(help_text="The records to publish, with the last check's "
                                                              "finding for each (always listed, verified or not)")

    @extend_schema_field(AccountDnsRecordOutput(many=True))
    def get_dns_records(self, domain) -> list[dict]:
        records = domain_records(domain)
        for record in records:
            record.required = record.key in ("mx", "ownership")
        return AccountDnsRecordOutput(records, many=True).data


class AccountDomainListApi(APIView):
    required_scopes = "domains:read"

    @extend_schema(tags=["domains"], responses={200: AccountDomainOutput(many=True)},
                   summary="List the account's domains with their DNS records")
    def get(self, request):
        return Response(AccountDomainOutput(account_domains(account=request_account(request)), many=True).data)


class AccountDomainDetailApi(APIView):
    required_scopes = "domains:read"

    @extend_schema(tags=["domains"], responses={200: AccountDomainOutput},
                   summary="One domain and the DNS records to publish for it")
    def get(self, request, domain_id: int):
        domain = account_domain_get(account=request_account(request), domain_id=domain_id)
        return Response(AccountDomainOutput(domain).data)
