"""/v1/hosting/domains/{id}/protection and /sender-rules: a client domain's spam thresholds and the
senders its partner allows or blocks for all of the domain's mailboxes."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.views import DOMAINS
from api.inputs import StrictInput
from api.serializers import SenderRuleInput, SenderRuleOutput
from mailcore.domains.models import Domain
from mailcore.partners.selectors import partner_domain_get
from protection.selectors import domain_policy_get, domain_sender_rules
from protection.services import (
    SCORE_MAX,
    SCORE_MIN,
    domain_policy_reset,
    domain_policy_set,
    domain_sender_rule_add,
    sender_rule_delete,
)

TAG = "hosting: protection"
SCORE = f"An rspamd score ({SCORE_MIN:g} to {SCORE_MAX:g}; a clean message scores near 0, GTUBE 15)."


class ProtectionOutput(serializers.Serializer):
    domain = serializers.CharField(source="domain.name")
    junk_at = serializers.FloatField(help_text="At or over this score mail goes to Junk. " + SCORE)
    quarantine_at = serializers.FloatField(help_text="At or over this score mail is held in quarantine. " + SCORE)
    refuse_at = serializers.FloatField(help_text="At or over this score mail is refused at SMTP. " + SCORE)
    greylist = serializers.BooleanField(help_text="Unknown senders with a doubtful score are asked to retry once.")
    is_default = serializers.SerializerMethodField()

    def get_is_default(self, policy) -> bool:
        return policy.pk is None


class ProtectionInput(StrictInput):
    junk_at = serializers.FloatField(required=False)
    quarantine_at = serializers.FloatField(required=False)
    refuse_at = serializers.FloatField(required=False)
    greylist = serializers.BooleanField(required=False)


class _DomainApi(HostingApi):
    required_scopes = DOMAINS

    def domain(self, domain_id: int) -> Domain:
        return partner_domain_get(partner=self.partner, domain_id=domain_id)


class HostingDomainProtectionApi(_DomainApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_protection_retrieve", responses={200: ProtectionOutput},
                   summary="A client domain's spam thresholds")
    def get(self, request, domain_id: int):
        return Response(ProtectionOutput(domain_policy_get(domain=self.domain(domain_id))).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_protection_update", request=ProtectionInput,
                   responses={200: ProtectionOutput}, summary="Change a client domain's spam thresholds",
                   description="Fields left out keep their value. 422 with field errors unless "
                   "junk_at <= quarantine_at <= refuse_at, or for a score outside 0 to 100. Mailbox owners can "
                   "only make their own filtering stricter than this.")
    def patch(self, request, domain_id: int):
        domain = self.domain(domain_id)
        data = ProtectionInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(ProtectionOutput(domain_policy_set(domain=domain, **data.validated_data)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_protection_reset", responses={200: ProtectionOutput},
                   summary="Back to the default thresholds")
    def delete(self, request, domain_id: int):
        return Response(ProtectionOutput(domain_policy_reset(domain=self.domain(domain_id))).data)


class HostingDomainSenderRuleListApi(_DomainApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_sender_rules_list",
                   responses={200: SenderRuleOutput(many=True)},
                   summary="Senders allowed or blocked for every mailbox of a client domain")
    def get(self, request, domain_id: int):
        return Response(SenderRuleOutput(domain_sender_rules(domain=self.domain(domain_id)), many=True).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_sender_rules_create", request=SenderRuleInput,
                   responses={201: SenderRuleOutput}, summary="Allow or block a sender for a client domain",
                   description="An address, or a domain with its subdomains. A mailbox owner's own rule for the "
                   "same sender comes first. An allowed sender that fails DMARC is not let in. Adding a rule "
                   "that exists answers it again; 422 when the sender is invalid or has the opposite rule.")
    def post(self, request, domain_id: int):
        domain = self.domain(domain_id)
        data = SenderRuleInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(SenderRuleOutput(domain_sender_rule_add(domain=domain, **data.validated_data)).data,
                        status=201)


class HostingDomainSenderRuleDetailApi(_DomainApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_sender_rules_delete", responses={204: None},
                   summary="Remove an allowed or blocked sender of a client domain")
    def delete(self, request, domain_id: int, rule_id: int):
        sender_rule_delete(rule=domain_sender_rules(domain=self.domain(domain_id)).get(pk=rule_id))
        return Response(status=204)
