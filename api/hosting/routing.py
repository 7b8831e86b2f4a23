"""/v1/hosting/domains/{id}/catch-all: where a client domain's mail to unknown local parts goes."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.serializers import DomainOutput
from api.inputs import StrictInput
from mailcore.mailboxes.routing import domain_catch_all_clear, domain_catch_all_set
from mailcore.partners.selectors import partner_domain_get

TAG = "hosting: domains"
RISK = ("Every message to a made-up address on the domain lands in that mailbox, spam included. Named "
        "addresses still win: mailboxes, aliases, return paths, SRS and report addresses.")


class CatchAllInput(StrictInput):
    address = serializers.EmailField(max_length=254, help_text=(
        "An active mailbox on this domain (422 otherwise, and for an alias domain, whose mail follows its "
        "primary's catch-all)"))


class HostingDomainCatchAllApi(HostingApi):
    required_scopes = {"PUT": "partner:domains:write", "DELETE": "partner:domains:write"}

    @extend_schema(tags=[TAG], operation_id="hosting_domain_catch_all_set", request=CatchAllInput,
                   responses={200: DomainOutput}, summary="Route unknown local parts to one mailbox",
                   description=RISK)
    def put(self, request, domain_id: int):
        domain = partner_domain_get(partner=self.partner, domain_id=domain_id)
        data = CatchAllInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(DomainOutput(domain_catch_all_set(domain=domain, address=data.validated_data["address"])).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_catch_all_clear", request=None,
                   responses={200: DomainOutput}, summary="Refuse unknown local parts again (550 5.1.1)")
    def delete(self, request, domain_id: int):
        return Response(DomainOutput(domain_catch_all_clear(
            domain=partner_domain_get(partner=self.partner, domain_id=domain_id))).data)
