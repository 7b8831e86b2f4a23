"""/v1/hosting/domains/{id}/mta-sts: a client domain's MTA-STS policy (served at
https://mta-sts.<domain>/.well-known/mta-sts.txt once the domain is verified) and its mode."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.views import DOMAINS
from api.inputs import StrictInput
from mailcore.domains.models import Domain
from mailcore.domains.mta_sts import (
    MTA_STS_LABEL,
    POLICY_PATH,
    domain_mta_sts_mode_set,
    mta_sts_policy,
    mta_sts_policy_id,
)
from mailcore.partners.selectors import partner_domain_get

TAG = "hosting: domains"
MODES = ("testing: senders deliver as before and report TLS failures (TLS-RPT); enforce: senders that honour "
         "MTA-STS deliver only over TLS to our MX with a valid certificate, or not at all; none: senders forget "
         "the policy.")


class MtaStsOutput(serializers.Serializer):
    domain = serializers.CharField(source="name")
    mode = serializers.ChoiceField(source="mta_sts_mode", choices=Domain.MtaStsMode.values, help_text=MODES)
    policy_id = serializers.SerializerMethodField(help_text="The id the _mta-sts TXT record must name; it "
                                                  "changes whenever the policy does")
    policy_url = serializers.SerializerMethodField()
    policy = serializers.SerializerMethodField(help_text="The policy file's text (RFC 8461)")
    served = serializers.BooleanField(source="is_verified", help_text="Only a verified domain's policy is served")

    def get_policy_id(self, domain) -> str:
        return mta_sts_policy_id(domain)

    def get_policy_url(self, domain) -> str:
        return f"https://{MTA_STS_LABEL}.{domain.name}{POLICY_PATH}"

    def get_policy(self, domain) -> str:
        return mta_sts_policy(domain)


class MtaStsInput(StrictInput):
    mode = serializers.ChoiceField(choices=Domain.MtaStsMode.values, help_text=MODES)


class HostingDomainMtaStsApi(HostingApi):
    required_scopes = DOMAINS

    def domain(self, domain_id: int) -> Domain:
        return partner_domain_get(partner=self.partner, domain_id=domain_id)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_mta_sts_retrieve", responses={200: MtaStsOutput},
                   summary="A client domain's MTA-STS policy")
    def get(self, request, domain_id: int):
        return Response(MtaStsOutput(self.domain(domain_id)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_mta_sts_update", request=MtaStsInput,
                   responses={200: MtaStsOutput}, summary="Switch a client domain's MTA-STS mode",
                   description="New domains start in testing. Switch to enforce once the TLS reports show no "
                   "failures. The policy id changes with the mode: publish the new _mta-sts record (the domain's "
                   "dns_records show it), or senders keep the policy they have. 422 for another mode.")
    def patch(self, request, domain_id: int):
        domain = self.domain(domain_id)
        data = MtaStsInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(MtaStsOutput(domain_mta_sts_mode_set(domain=domain, **data.validated_data)).data)
