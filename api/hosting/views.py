"""/v1/hosting: domains, clients, settings, slot-funded mailboxes, stats and summary."""
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.serializers import (
    ClientOutput,
    DomainOutput,
    PartnerMailboxOutput,
    SettingsOutput,
    StatsOutput,
    SummaryOutput,
    with_open_checkouts,
)
from api.inputs import HostnameField, ReturnUrlField, StrictInput
from billing.services.mailboxes import partner_mailbox_open, partner_mailbox_remove, partner_mailbox_renew_from_pool
from mailcore.domains import services as domains
from mailcore.errors import InvalidFields
from mailcore.partners import domains as domain_claims
from mailcore.partners.models import LapseAction, PartnerClient, PartnerMailbox
from mailcore.partners.selectors import (
    partner_client_get,
    partner_clients,
    partner_domain_get,
    partner_domains,
    partner_mailbox_get,
    partner_mailboxes,
    partner_stats,
    partner_summary,
)
from mailcore.partners.services import (
    client_create,
    client_delete,
    client_update,
    partner_settings_update,
)
from mailcore.paging import MAX_PAGE, page_window

DOMAINS = {"GET": "partner:domains:read", "POST": "partner:domains:write", "DELETE": "partner:domains:write",
           "PATCH": "partner:domains:write"}
MAILBOXES = {"GET": "partner:mailboxes:read", "POST": "partner:mailboxes:write", "DELETE": "partner:mailboxes:write",
             "PATCH": "partner:mailboxes:write"}
MAILBOX_PAGE, MAILBOX_PAGE_MAX = 50, 100


# domains


class DomainCreateInput(StrictInput):
    domain_name = HostnameField()
    client_id = serializers.IntegerField(required=False)
    alias_of = serializers.IntegerField(required=False, help_text=(
        "The id of one of your domains that is not itself an alias: the new domain becomes its alias, for "
        "the same client (422 otherwise)"))


class HostingDomainListApi(HostingApi):
    required_scopes = DOMAINS

    @extend_schema(tags=["hosting: domains"], responses={200: DomainOutput(many=True)}, summary="List domains")
    def get(self, request):
        return Response(DomainOutput(partner_domains(partner=self.partner), many=True).data)

    @extend_schema(tags=["hosting: domains"], request=DomainCreateInput, responses={201: DomainOutput},
                   summary="Claim a domain (400 invalid name, 402 domain limit, 409 claimed, 422 alias_of)",
                   description="Without client_id a new client named after the domain is created. The record "
                   "lists the DNS records to create; ok, found_value and reason stay null until verify. 409 when "
                   "another claim holds the name: a verified one, or an unverified one less than 7 days old (an "
                   "older unverified claim lapses and is removed by this one). With alias_of the domain is an alias "
                   "domain: it goes through the same DNS verification and receives only once verified; 422 when "
                   "alias_of is not one of your domains, is itself an alias, or client_id names another client.")
    def post(self, request):
        data = DomainCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        client = None
        if "client_id" in data.validated_data:
            client = PartnerClient.objects.filter(partner=self.partner, pk=data.validated_data["client_id"]).first()
            if client is None:
                raise exceptions.NotFound("No client with this id.")
        alias_of = None
        if "alias_of" in data.validated_data:
            alias_of = partner_domains(partner=self.partner).filter(pk=data.validated_data["alias_of"]).first()
            if alias_of is None:
                raise InvalidFields({"alias_of": ["not a domain of this account"]})
        domain = domain_claims.domain_add_for_partner(partner=self.partner, name=data.validated_data["domain_name"],
                                                      client=client, alias_of=alias_of)
        return Response(DomainOutput(domain).data, status=201)


class HostingDomainDetailApi(HostingApi):
    required_scopes = DOMAINS

    @extend_schema(tags=["hosting: domains"], responses={200: DomainOutput}, summary="A domain and its verification")
    def get(self, request, domain_id: int):
        return Response(DomainOutput(partner_domain_get(partner=self.partner, domain_id=domain_id)).data)

    @extend_schema(tags=["hosting: domains"], responses={204: None},
                   summary="Delete a domain (409 while it has mailboxes or alias domains)")
    def delete(self, request, domain_id: int):
        domain_claims.domain_delete(domain=partner_domain_get(partner=self.partner, domain_id=domain_id))
        return Response(status=204)


class HostingDomainVerifyApi(HostingApi):
    required_scopes = {"POST": "partner:domains:write"}

    @extend_schema(tags=["hosting: domains"], request=None, responses={200: DomainOutput},
                   summary="Check the domain's DNS now",
                   description="MX and the ownership token decide verified; every record gets ok, found_value "
                   "and a specific reason. Verified with all records right: dns_records is null.")
    def post(self, request, domain_id: int):
        domain = partner_domain_get(partner=self.partner, domain_id=domain_id)
        return Response(DomainOutput(domains.domain_verify(domain=domain)).data)


# clients


class ClientCreateInput(StrictInput):
    name = serializers.CharField(max_length=200)


class ClientUpdateInput(StrictInput):
    name = serializers.CharField(max_length=200, required=False)
    lapse_action_override = serializers.ChoiceField(choices=LapseAction.choices, allow_null=True, required=False,
                                                    help_text="null clears the override")


class HostingClientListApi(HostingApi):
    required_scopes = DOMAINS

    @extend_schema(tags=["hosting: clients"], responses={200: ClientOutput(many=True)}, summary="List clients")
    def get(self, request):
        return Response(ClientOutput(partner_clients(partner=self.partner), many=True).data)

    @extend_schema(tags=["hosting: clients"], request=ClientCreateInput, responses={201: ClientOutput},
                   summary="Create a client")
    def post(self, request):
        data = ClientCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        client = client_create(partner=self.partner, **data.validated_data)
        return Response(ClientOutput(partner_client_get(partner=self.partner, client_id=client.pk)).data, status=201)


class HostingClientDetailApi(HostingApi):
    required_scopes = DOMAINS

    @extend_schema(tags=["hosting: clients"], responses={200: ClientOutput}, summary="A client")
    def get(self, request, client_id: int):
        return Response(ClientOutput(partner_client_get(partner=self.partner, client_id=client_id)).data)

    @extend_schema(tags=["hosting: clients"], request=ClientUpdateInput, responses={200: ClientOutput},
                   summary="Rename a client or set its lapse action override")
    def patch(self, request, client_id: int):
        client = partner_client_get(partner=self.partner, client_id=client_id)
        data = ClientUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        client_update(client=client, **data.validated_data)
        return Response(ClientOutput(partner_client_get(partner=self.partner, client_id=client_id)).data)

    @extend_schema(tags=["hosting: clients"], responses={204: None}, summary="Delete a client (409 while it has domains)")
    def delete(self, request, client_id: int):
        client_delete(client=partner_client_get(partner=self.partner, client_id=client_id))
        return Response(status=204)


# settings


class SettingsInput(StrictInput):
    default_client_lapse_action = serializers.ChoiceField(choices=LapseAction.choices)


class HostingSettingsApi(HostingApi):
    required_scopes = {"GET": "partner:stats:read", "PATCH": "partner:settings:write"}

    @extend_schema(tags=["hosting: account"], responses={200: SettingsOutput}, summary="Account-wide settings")
    def get(self, request):
        return Response(SettingsOutput(self.partner).data)

    @extend_schema(tags=["hosting: account"], request=SettingsInput, responses={200: SettingsOutput},
                   summary="Change the default lapse action for clients without an override")
    def patch(self, request):
        data = SettingsInput(data=request.data, partial=True)  # PATCH: {} changes nothing
        data.is_valid(raise_exception=True)
        partner = self.partner
        if data.validated_data:
            partner = partner_settings_update(partner=partner, **data.validated_data)
        return Response(SettingsOutput(partner).data)


# mailboxes


class MailboxCreateInput(StrictInput):
    domain_id = serializers.IntegerField()
    local_part = serializers.CharField(max_length=64)
    password = serializers.CharField(trim_whitespace=False, write_only=True)
    display_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    plan_id = serializers.ChoiceField(choices=["pro", "premium"])
    funding_mode = serializers.ChoiceField(choices=PartnerMailbox.Funding.values, default="slot")
    return_url = ReturnUrlField(required=False, help_text="Required for pay_as_you_go: where the checkout returns")


class MailboxListQuery(serializers.Serializer):
    status = serializers.ChoiceField(choices=PartnerMailbox.Status.values, required=False)
    page = serializers.IntegerField(required=False, min_value=1, max_value=MAX_PAGE,
                                    help_text=f"1 to {MAX_PAGE}; a page past the end is empty. Without page and "
                                    "per_page the list is whole.")
    per_page = serializers.IntegerField(required=False, min_value=1, max_value=MAILBOX_PAGE_MAX,
                                        help_text=f"1 to {MAILBOX_PAGE_MAX}; default {MAILBOX_PAGE} once page is given.")


class HostingMailboxListApi(HostingApi):
    required_scopes = MAILBOXES

    @extend_schema(tags=["hosting: mailboxes"], parameters=[MailboxListQuery],
                   responses={200: PartnerMailboxOutput(many=True)}, summary="List client mailboxes, newest first",
                   description="With page or per_page, one page of the list (a page shorter than per_page is the "
                   "last); without them, every mailbox, as the list always was.")
    def get(self, request):
        query = MailboxListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        fields = query.validated_data
        rows = with_open_checkouts(partner_mailboxes(partner=self.partner, status=fields.get("status")))
        if "page" in fields or "per_page" in fields:
            rows = page_window(rows, page=fields.get("page", 1), size=fields.get("per_page", MAILBOX_PAGE))
        return Response(PartnerMailboxOutput(rows, many=True).data)

    @extend_schema(tags=["hosting: mailboxes"], request=MailboxCreateInput, responses={201: PartnerMailboxOutput},
                   summary="Create a mailbox funded by a slot (or the trial allowance)",
                   description="400 unverified domain or pay-as-you-go without a retail price; 402 no slot; "
                   "409 the address exists; 422 bad local part, password under 8 or plan.")
    def post(self, request):
        data = MailboxCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        domain = partner_domain_get(partner=self.partner, domain_id=fields.pop("domain_id"))
        created = partner_mailbox_open(partner=self.partner, domain=domain, **fields)
        return Response(PartnerMailboxOutput(created).data, status=201)


class HostingMailboxDetailApi(HostingApi):
    required_scopes = MAILBOXES

    @extend_schema(tags=["hosting: mailboxes"], responses={200: PartnerMailboxOutput}, summary="A client mailbox")
    def get(self, request, mailbox_id: int):
        partner_mailbox = partner_mailbox_get(partner=self.partner, mailbox_id=mailbox_id)
        return Response(PartnerMailboxOutput(partner_mailbox, context={"fresh_checkout": True}).data)

    @extend_schema(tags=["hosting: mailboxes"], responses={204: None},
                   summary="Delete: slot freed, mail account deactivated with its mail kept",
                   description="A pay-as-you-go mailbox still pending payment is deleted with its mail account and "
                   "its open checkout expires; a paid one also ends its subscription at the provider.")
    def delete(self, request, mailbox_id: int):
        partner_mailbox_remove(partner_mailbox=partner_mailbox_get(partner=self.partner, mailbox_id=mailbox_id))
        return Response(status=204)


class HostingMailboxRenewApi(HostingApi):
    required_scopes = {"POST": "partner:mailboxes:write"}

    @extend_schema(tags=["hosting: mailboxes"], request=None, responses={200: PartnerMailboxOutput},
                   summary="Extend the term by a month (re-enables a lapsed mailbox)")
    def post(self, request, mailbox_id: int):
        renewed = partner_mailbox_renew_from_pool(
            partner_mailbox=partner_mailbox_get(partner=self.partner, mailbox_id=mailbox_id))
        return Response(PartnerMailboxOutput(renewed).data)


# stats


class HostingStatsApi(HostingApi):
    required_scopes = {"GET": "partner:stats:read"}

    @extend_schema(tags=["hosting: account"], responses={200: StatsOutput}, summary="Aggregate stats")
    def get(self, request):
        return Response(StatsOutput(partner_stats(partner=self.partner)).data)


class HostingSummaryApi(HostingApi):
    required_scopes = {"GET": "partner:stats:read"}

    @extend_schema(tags=["hosting: account"], responses={200: SummaryOutput}, summary="The account at a glance")
    def get(self, request):
        return Response(SummaryOutput(partner_summary(partner=self.partner)).data)
