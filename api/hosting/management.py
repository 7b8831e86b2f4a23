"""/v1/hosting/mailboxes/{id}: forwarding rules, aliases and identity; and the public page behind
the forwarding confirmation link."""
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.permissions import AllowAny
from rest_framework.renderers import StaticHTMLRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput, one_line
from api.pagination import page_query
from api.hosting.access import HostingApi
from api.hosting.views import MAILBOXES
from mailcore.mailboxes import aliases, forwarding
from mailcore.mailboxes.services import mailbox_set_identity
from mailcore.partners.models import PartnerMailbox
from mailcore.partners.selectors import mailbox_aliases, mailbox_forwarding_rules, partner_mailbox_get
from mailcore.paging import page_window

TAG = "hosting: mailbox management"
HTML_INVALID_LINK = OpenApiResponse(OpenApiTypes.STR, description="Tampered or expired link, or the rule is gone; "
                                    "the page says which")
SIGNATURE_MAX = 10_000


class _MailboxApi(HostingApi):
    required_scopes = MAILBOXES

    def partner_mailbox(self, mailbox_id: int) -> PartnerMailbox:
        return partner_mailbox_get(partner=self.partner, mailbox_id=mailbox_id)


# forwarding


class ForwardingRuleOutput(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField(source="mailbox.address")
    forward_to = serializers.CharField()
    keep_copy = serializers.BooleanField()
    enabled = serializers.BooleanField()
    confirmed = serializers.SerializerMethodField()
    confirmed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_confirmed(self, rule) -> bool:
        return rule.confirmed_at is not None


class ForwardingRuleCreateInput(StrictInput):
    email = serializers.CharField(max_length=320, help_text="This mailbox's address")
    forward_to = serializers.CharField(max_length=320)
    keep_copy = serializers.BooleanField(default=True)


class ForwardingRuleUpdateInput(StrictInput):
    enabled = serializers.BooleanField()


class HostingForwardingListApi(_MailboxApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_forwarding_list",
                   responses={200: ForwardingRuleOutput(many=True)}, summary="List a mailbox's forwarding rules")
    def get(self, request, mailbox_id: int):
        rules = mailbox_forwarding_rules(partner_mailbox=self.partner_mailbox(mailbox_id)).select_related("mailbox")
        return Response(ForwardingRuleOutput(rules, many=True).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_forwarding_create", request=ForwardingRuleCreateInput,
                   responses={201: ForwardingRuleOutput}, summary="Add a forwarding rule (the target must confirm)",
                   description="The target gets a mail with a confirmation link valid for 7 days; mail forwards only "
                   "while the rule is enabled and confirmed. 422: email is not this mailbox's address, forward_to is "
                   "invalid, is this mailbox or one of its aliases, or already has a rule. 502: the confirmation mail "
                   "could not be sent (no rule is kept).")
    def post(self, request, mailbox_id: int):
        partner_mailbox = self.partner_mailbox(mailbox_id)
        data = ForwardingRuleCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        rule = forwarding.forwarding_rule_create(mailbox=partner_mailbox.mailbox, **data.validated_data)
        return Response(ForwardingRuleOutput(rule).data, status=201)


class HostingForwardingDetailApi(_MailboxApi):
    def rule(self, mailbox_id: int, rule_id: int):
        rules = mailbox_forwarding_rules(partner_mailbox=self.partner_mailbox(mailbox_id)).select_related("mailbox")
        return rules.get(pk=rule_id)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_forwarding_update", request=ForwardingRuleUpdateInput,
                   responses={200: ForwardingRuleOutput}, summary="Turn a forwarding rule on or off")
    def patch(self, request, mailbox_id: int, rule_id: int):
        rule = self.rule(mailbox_id, rule_id)
        data = ForwardingRuleUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        rule = forwarding.forwarding_rule_set_enabled(rule=rule, enabled=data.validated_data["enabled"])
        return Response(ForwardingRuleOutput(rule).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_forwarding_delete", responses={204: None},
                   summary="Delete a forwarding rule")
    def delete(self, request, mailbox_id: int, rule_id: int):
        forwarding.forwarding_rule_delete(rule=self.rule(mailbox_id, rule_id))
        return Response(status=204)


# aliases


class AliasOutput(serializers.Serializer):
    id = serializers.IntegerField()
    mailbox = serializers.CharField(source="mailbox.address")
    alias_address = serializers.CharField(source="address")
    created_at = serializers.DateTimeField()


class AliasPageOutput(serializers.Serializer):
    aliases = AliasOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()


AliasListQuery = page_query(size_name="page_size", default_size=20, max_size=100, name="AliasListQuery")


class AliasCreateInput(StrictInput):
    mailbox = serializers.CharField(max_length=320, help_text="This mailbox's address")
    alias_address = serializers.CharField(max_length=320)


class HostingAliasListApi(_MailboxApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_aliases_list", parameters=[AliasListQuery],
                   responses={200: AliasPageOutput}, summary="List a mailbox's aliases, a page at a time",
                   description="Ordered by address; page_size over 100 is 422; a page past the end is empty.")
    def get(self, request, mailbox_id: int):
        partner_mailbox = self.partner_mailbox(mailbox_id)
        query = AliasListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, page_size = query.validated_data["page"], query.validated_data["page_size"]
        rows = mailbox_aliases(partner_mailbox=partner_mailbox).select_related("mailbox")
        return Response(AliasPageOutput({"aliases": page_window(rows, page=page, size=page_size), "total": rows.count(),
                                         "page": page, "page_size": page_size}).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_aliases_create", request=AliasCreateInput,
                   responses={201: AliasOutput}, summary="Add an alias",
                   description="The alias must be on one of your domains (else 422); mail reaches it once that "
                   "domain is verified. 409: a mailbox or an alias already has the address.")
    def post(self, request, mailbox_id: int):
        mailbox = self.partner_mailbox(mailbox_id).mailbox
        data = AliasCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data["mailbox"].strip().lower() != mailbox.address.lower():
            raise exceptions.ValidationError({"mailbox": [f"must be this mailbox's address, {mailbox.address}"]})
        alias = aliases.alias_create(mailbox=mailbox, alias_address=data.validated_data["alias_address"])
        return Response(AliasOutput(alias).data, status=201)


class HostingAliasDetailApi(_MailboxApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_aliases_delete", responses={204: None},
                   summary="Delete an alias")
    def delete(self, request, mailbox_id: int, alias_id: int):
        alias = mailbox_aliases(partner_mailbox=self.partner_mailbox(mailbox_id)).get(pk=alias_id)
        aliases.alias_delete(alias=alias)
        return Response(status=204)


# identity


class IdentityOutput(serializers.Serializer):
    display_name = serializers.CharField()
    signature_html = serializers.CharField()


class IdentityInput(StrictInput):
    display_name = serializers.CharField(max_length=200, required=False, allow_blank=True,
                                         validators=[one_line])
    signature_html = serializers.CharField(max_length=SIGNATURE_MAX, required=False, allow_blank=True,
                                           trim_whitespace=False,
                                           help_text="HTML appended to outgoing mail; sanitized like mail")


class HostingIdentityApi(_MailboxApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_identity_retrieve", responses={200: IdentityOutput},
                   summary="The name and signature outgoing mail carries")
    def get(self, request, mailbox_id: int):
        return Response(IdentityOutput(self.partner_mailbox(mailbox_id).mailbox).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_identity_update", request=IdentityInput,
                   responses={200: IdentityOutput}, summary="Change the display name or the signature",
                   description="Fields left out keep their value. The signature is sanitized (no scripts, "
                   "handlers or dangerous URLs); the response shows what will be sent.")
    def patch(self, request, mailbox_id: int):
        mailbox = self.partner_mailbox(mailbox_id).mailbox
        data = IdentityInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(IdentityOutput(mailbox_set_identity(mailbox=mailbox, **data.validated_data)).data)


# the confirmation link: public, the token is the credential


def _page(title: str, message, *, form: bool = False) -> str:
    button = mark_safe('<form method="post"><button type="submit">Confirm forwarding</button></form>') if form else ""
    return format_html(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><title>{}</title></head>'
        "<body><main><h1>{}</h1><p>{}</p>{}</main></body></html>", title, title, message, button)


@method_decorator(never_cache, name="dispatch")
class ForwardingConfirmApi(APIView):
    """GET only shows what would be confirmed, so link scanners that fetch it confirm nothing; POST confirms."""

    authentication_classes = []
    permission_classes = [AllowAny]
    renderer_classes = [StaticHTMLRenderer]

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Referrer-Policy"] = "no-referrer"  # the token is in the URL
        response["X-Robots-Tag"] = "noindex"
        return response

    def _invalid(self, error: forwarding.ConfirmationInvalid) -> Response:
        # 400, not 404: /v1/ 404s are rewritten to bare JSON, and a person reads this page.
        return Response(_page("Link not valid", str(error)), status=400)

    @extend_schema(tags=[TAG], operation_id="hosting_forwarding_confirm_page", auth=[],
                   responses={(200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="A Confirm button"),
                              (400, "text/html"): HTML_INVALID_LINK},
                   summary="The page the forwarding confirmation link opens (confirms nothing)")
    def get(self, request, token: str):
        try:
            rule = forwarding.forwarding_rule_from_token(token)
        except forwarding.ConfirmationInvalid as error:
            return self._invalid(error)
        if rule.confirmed_at is not None:
            return Response(_page("Forwarding confirmed", self._confirmed_text(rule)))
        message = format_html("{} asks to forward its mail to {}. Confirm if you want to receive it.",
                              rule.mailbox.address, rule.forward_to)
        return Response(_page("Confirm forwarding", message, form=True))

    @extend_schema(tags=[TAG], operation_id="hosting_forwarding_confirm", auth=[], request=None,
                   responses={(200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="Confirmed"),
                              (400, "text/html"): HTML_INVALID_LINK},
                   summary="Confirm the forwarding (idempotent)")
    def post(self, request, token: str):
        try:
            rule = forwarding.forwarding_rule_confirm(token=token)
        except forwarding.ConfirmationInvalid as error:
            return self._invalid(error)
        return Response(_page("Forwarding confirmed", self._confirmed_text(rule)))

    @staticmethod
    def _confirmed_text(rule) -> str:
        state = "" if rule.enabled else " It is switched off at the moment; nothing forwards until it is switched on."
        return format_html("Mail to {} is forwarded to {}.{}", rule.mailbox.address, rule.forward_to, state)
