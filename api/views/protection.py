"""/protection: an owner's allowed and blocked senders and stricter filtering for one of the
account's hosted mailboxes (the `email` query names it). `mailboxes:read` reads, `mailboxes:write` changes."""
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.permissions import request_account
from api.serializers import SenderRuleInput, SenderRuleOutput
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import mailbox_get_by_address
from protection.selectors import mailbox_domain_junk_at, mailbox_policy_get, mailbox_sender_rules
from protection.services import mailbox_policy_set, mailbox_sender_rule_add, sender_rule_delete

TAG = "protection"
SCOPES = {"GET": "mailboxes:read", "POST": "mailboxes:write", "PATCH": "mailboxes:write",
          "DELETE": "mailboxes:write"}


class MailboxAddressQuery(serializers.Serializer):
    email = serializers.EmailField(help_text="The mailbox address (one of yours, hosted here).")


def _mailbox(request) -> Mailbox:
    query = MailboxAddressQuery(data=request.query_params)
    query.is_valid(raise_exception=True)
    mailbox = mailbox_get_by_address(account=request_account(request), address=query.validated_data["email"])
    if mailbox.kind != Mailbox.Kind.MANAGED:
        raise exceptions.NotFound("No hosted mailbox with this address: a connected mailbox's mail is filtered "
                                  "by its own provider.")
    return mailbox


class ProtectionSenderRuleListApi(APIView):
    required_scopes = SCOPES

    @extend_schema(tags=[TAG], operation_id="protection_sender_rules_list", parameters=[MailboxAddressQuery],
                   responses={200: SenderRuleOutput(many=True)}, summary="A mailbox's allowed and blocked senders")
    def get(self, request):
        return Response(SenderRuleOutput(mailbox_sender_rules(mailbox=_mailbox(request)), many=True).data)

    @extend_schema(tags=[TAG], operation_id="protection_sender_rules_create", parameters=[MailboxAddressQuery],
                   request=SenderRuleInput, responses={201: SenderRuleOutput},
                   summary="Allow or block a sender (an address, or a domain with its subdomains)",
                   description="Allowed senders skip the spam score, unless they fail DMARC (a forged From is "
                   "never let in); blocked senders' mail is refused at SMTP (the sender is told). Adding a rule that exists answers it again; "
                   "422 when the sender is invalid or already has the opposite rule.")
    def post(self, request):
        mailbox = _mailbox(request)
        data = SenderRuleInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(SenderRuleOutput(mailbox_sender_rule_add(mailbox=mailbox, **data.validated_data)).data,
                        status=201)


class ProtectionSenderRuleDetailApi(APIView):
    required_scopes = SCOPES

    @extend_schema(tags=[TAG], operation_id="protection_sender_rules_delete", parameters=[MailboxAddressQuery],
                   responses={204: None}, summary="Remove an allowed or blocked sender")
    def delete(self, request, rule_id: int):
        sender_rule_delete(rule=mailbox_sender_rules(mailbox=_mailbox(request)).get(pk=rule_id))
        return Response(status=204)


class FilteringOutput(serializers.Serializer):
    junk_at = serializers.FloatField(allow_null=True, help_text="Your own Junk threshold; null follows the "
                                     "domain's.")
    domain_junk_at = serializers.FloatField(help_text="The Junk threshold your provider set for the domain: "
                                            "yours can only be lower (stricter).")


class FilteringInput(StrictInput):
    junk_at = serializers.FloatField(allow_null=True, help_text="A spam score; at most domain_junk_at. null "
                                     "follows the domain's.")


def _filtering(mailbox: Mailbox) -> dict:
    return FilteringOutput({"junk_at": mailbox_policy_get(mailbox=mailbox).junk_at,
                            "domain_junk_at": mailbox_domain_junk_at(mailbox=mailbox)}).data


class ProtectionFilteringApi(APIView):
    required_scopes = SCOPES

    @extend_schema(tags=[TAG], operation_id="protection_filtering_retrieve", parameters=[MailboxAddressQuery],
                   responses={200: FilteringOutput}, summary="How strictly a mailbox files mail in Junk")
    def get(self, request):
        return Response(_filtering(_mailbox(request)))

    @extend_schema(tags=[TAG], operation_id="protection_filtering_update", parameters=[MailboxAddressQuery],
                   request=FilteringInput, responses={200: FilteringOutput},
                   summary="File more mail in Junk (422 above the domain's threshold)")
    def patch(self, request):
        mailbox = _mailbox(request)
        data = FilteringInput(data=request.data)
        data.is_valid(raise_exception=True)
        mailbox_policy_set(mailbox=mailbox, junk_at=data.validated_data["junk_at"])
        return Response(_filtering(mailbox))
