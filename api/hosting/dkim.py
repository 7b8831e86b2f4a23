"""/v1/hosting/domains/{id}/dkim and /dkim-rotation: a client domain's DKIM keys, its rotation schedule,
Ed25519 beside RSA, and starting or cancelling a rotation (mailcore.domains.rotation)."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.views import DOMAINS
from api.inputs import StrictInput
from mailcore.domains.models import DkimKey, Domain
from mailcore.domains.rotation import (
    KEEP_OLD_KEY,
    SCHEDULE_MONTHS_MAX,
    dkim_rotation_cancel,
    dkim_rotation_start,
    dkim_settings_set,
    dkim_status,
)
from mailcore.partners.selectors import partner_domain_get

TAG = "hosting: domains"
MONTHS = (f"Start a key rotation this many months after the signing key started signing (1 to "
          f"{SCHEDULE_MONTHS_MAX}); 0: never (the default).")


class DkimKeyOutput(serializers.Serializer):
    selector = serializers.CharField()
    algorithm = serializers.ChoiceField(choices=DkimKey.Algorithm.choices)
    state = serializers.ChoiceField(choices=DkimKey.State.choices, help_text=(
        "pending: published in dns_records, waiting to be seen in DNS (nothing signs with it yet); active: "
        "signs mail; retiring: no longer signs, keep it published until keep_until; retired: may be removed."))
    host = serializers.CharField(help_text="The TXT record's host, below the domain.")
    value = serializers.CharField(help_text="The TXT record's value.")
    created_at = serializers.DateTimeField()
    active_since = serializers.DateTimeField(source="activated_at", allow_null=True)
    keep_until = serializers.DateTimeField(source="retire_after", allow_null=True)
    retired_at = serializers.DateTimeField(allow_null=True)


class DkimOutput(serializers.Serializer):
    domain = serializers.CharField(source="domain.name")
    rotate_every_months = serializers.IntegerField(source="domain.dkim_rotate_every_months", help_text=MONTHS)
    next_rotation_at = serializers.DateTimeField(allow_null=True, help_text="When the schedule starts one.")
    ed25519 = serializers.BooleanField(source="domain.dkim_ed25519",
                                       help_text="An Ed25519 key signs beside RSA (RFC 8463) once DNS has it.")
    rotation = serializers.ChoiceField(choices=["none", "waiting_for_dns", "keeping_old_key"], help_text=(
        "none; waiting_for_dns: the new key is published in dns_records and signing switches once DNS has it "
        "(cancel allowed); keeping_old_key: signing switched, the old key stays published a week."))
    keys = DkimKeyOutput(many=True)


class DkimSettingsInput(StrictInput):
    rotate_every_months = serializers.IntegerField(required=False, min_value=0, max_value=SCHEDULE_MONTHS_MAX,
                                                   help_text=MONTHS)
    ed25519 = serializers.BooleanField(required=False)


class _DkimApi(HostingApi):
    required_scopes = DOMAINS

    def domain(self, domain_id: int) -> Domain:
        return partner_domain_get(partner=self.partner, domain_id=domain_id)


class HostingDomainDkimApi(_DkimApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_dkim_retrieve", responses={200: DkimOutput},
                   summary="A domain's DKIM keys, rotation and schedule")
    def get(self, request, domain_id: int):
        return Response(DkimOutput(dkim_status(domain=self.domain(domain_id))).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_dkim_update", request=DkimSettingsInput,
                   responses={200: DkimOutput}, summary="Set the rotation schedule; Ed25519 on or off",
                   description="Fields left out keep their value; 422 for a schedule outside 0 to "
                   f"{SCHEDULE_MONTHS_MAX}. Ed25519 turned on: a new key appears in dns_records and signs beside "
                   "RSA once DNS has it. Turned off: it stops signing at once and stays published "
                   f"{KEEP_OLD_KEY.days} days.")
    def patch(self, request, domain_id: int):
        domain = self.domain(domain_id)
        data = DkimSettingsInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(DkimOutput(dkim_status(domain=dkim_settings_set(domain=domain, **data.validated_data))).data)


class HostingDomainDkimRotationApi(_DkimApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_dkim_rotation_start", request=None,
                   responses={201: DkimOutput}, summary="Start a DKIM key rotation (409 while one runs)",
                   description="A new key under the other selector appears in dns_records beside the current "
                   "one. We look it up in DNS in the background (and on verify); mail is signed with it only "
                   f"once DNS has it, then the old key stays published {KEEP_OLD_KEY.days} days "
                   "(domain.dkim_rotated). 409 while a rotation runs, including its old key's week.")
    def post(self, request, domain_id: int):
        domain = self.domain(domain_id)
        dkim_rotation_start(domain=domain)
        return Response(DkimOutput(dkim_status(domain=domain)).data, status=201)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_dkim_rotation_cancel", responses={200: DkimOutput},
                   summary="Cancel a rotation before signing switches (409 after)")
    def delete(self, request, domain_id: int):
        domain = self.domain(domain_id)
        dkim_rotation_cancel(domain=domain)
        return Response(DkimOutput(dkim_status(domain=domain)).data)
