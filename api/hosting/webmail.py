"""/v1/hosting/webmail: the partner's webmail brand and its own webmail hostname.

Session-authenticated only (a Bearer token from POST /auth/login, or the portal's cookie): an API
key gets 401, as on /api-keys. Any hosting partner may read; changing anything needs a hosting
account in trial or active (403 with the reason otherwise: pending, expired, suspended, declined).
"""
from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.parsers import BaseParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from api.authentication import SESSION_ONLY
from api.inputs import StrictInput
from api.permissions import request_account
from mailcore.errors import InvalidFields
from mailcore.partners.models import HostingPartner
from webmail import branding, hostnames
from webmail.models import WebmailBrand, WebmailHostname

TAGS = ["hosting: webmail"]
SESSION_NOTE = ("Session auth only (Authorization: Bearer <token> from POST /auth/login, or the portal's "
                "cookie); an API key gets 401. ")
WRITE_NOTE = "403 unless the hosting account is in trial or active (pending, expired, suspended, declined). "


def _partner(request) -> HostingPartner:
    partner = getattr(request_account(request), "partner", None)
    if partner is None:
        raise exceptions.PermissionDenied("This account is not a hosting partner; apply to become one first.")
    return partner


class _WebmailApi(APIView):
    authentication_classes = SESSION_ONLY
    permission_classes = [IsAuthenticated]

    @property
    def partner(self) -> HostingPartner:
        return _partner(self.request)

    def writable_partner(self) -> HostingPartner:
        """The partner, once its account may change the brand (checked before the input is read)."""
        partner = self.partner
        branding.branding_allowed(partner)
        return partner


def _served_url(partner: HostingPartner, path: str) -> str | None:
    row = hostnames.hostname_get(partner=partner)
    return f"https://{row.hostname}{path}" if row is not None and row.is_verified else None


# --- branding ----------------------------------------------------------------------------------


class FillInput(StrictInput):
    color = serializers.CharField(help_text="#rrggbb")
    gradient_to = serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                        help_text="#rrggbb: a linear gradient from color to this; "
                                                  "null for a plain colour")
    angle = serializers.IntegerField(required=False, help_text="The gradient's direction in degrees, 0 to 360 "
                                                                 "(default 90: left to right)")

    def validate(self, attrs):
        try:
            return branding.Fill.parse(attrs.get("color"), attrs.get("gradient_to"), attrs.get("angle"))
        except InvalidFields as exc:
            raise serializers.ValidationError(exc.message_dict) from None


class BrandingInput(StrictInput):
    brand_name = serializers.CharField(required=False, allow_blank=True, max_length=branding.BRAND_NAME_MAX,
                                       trim_whitespace=True, help_text="Shown beside the logo and in page titles")
    primary = FillInput(required=False, allow_null=True,
                        help_text="Top bar and buttons. null restores the default colours.")
    secondary = FillInput(required=False, allow_null=True,
                          help_text="Accent and the sign-in page's background. null restores the default.")
    primary_color = serializers.CharField(required=False, help_text="Shorthand for primary: {color}: #rrggbb")
    secondary_color = serializers.CharField(required=False, help_text="Shorthand for secondary: {color}: #rrggbb")
    logo_url = serializers.CharField(required=False, allow_blank=True, max_length=2048,
                                     help_text="A public https image URL, fetched once now (no redirects, at most "
                                               "2 MB); the image is re-encoded and stored, the URL is not fetched "
                                               "again")


    def validate(self, attrs):
        """`primary_color` / `secondary_color` (the spec's names) are a plain colour each."""
        for name in ("primary", "secondary"):
            shorthand = attrs.pop(f"{name}_color", None)
            if shorthand is None:
                continue
            if name in attrs:
                raise serializers.ValidationError({f"{name}_color": [f"give {name} or {name}_color, not both"]})
            try:
                attrs[name] = branding.Fill.parse(shorthand, None, None)
            except InvalidFields as exc:
                raise serializers.ValidationError({f"{name}_color": exc.messages}) from None
        return attrs


class FillOutput(serializers.Serializer):
    color = serializers.CharField()
    gradient_to = serializers.CharField(allow_null=True)
    angle = serializers.IntegerField()
    css = serializers.CharField(help_text="What the stylesheet uses: the colour, or linear-gradient(...)")


class LogoOutput(serializers.Serializer):
    content_type = serializers.ChoiceField(choices=["image/png", "image/webp"])
    bytes = serializers.IntegerField()
    source_url = serializers.CharField(allow_null=True, help_text="The URL it was fetched from, if any")
    url = serializers.CharField(allow_null=True, help_text="Where the hostname serves it; null until verified")


class BrandingOutput(serializers.Serializer):
    brand_name = serializers.CharField()
    primary = FillOutput(allow_null=True)
    secondary = FillOutput(allow_null=True)
    logo = LogoOutput(allow_null=True)
    stylesheet_url = serializers.CharField(allow_null=True, help_text="On the verified hostname; else null")
    updated_at = serializers.DateTimeField(allow_null=True)


def _fill(fill: branding.Fill | None) -> dict | None:
    if fill is None:
        return None
    return {"color": fill.color, "gradient_to": fill.gradient_to or None, "angle": fill.angle, "css": fill.css}


def branding_record(partner: HostingPartner, brand: WebmailBrand | None) -> dict:
    version = branding.brand_version(brand)
    logo = None
    if brand is not None and brand.logo_content_type:
        logo = {"content_type": brand.logo_content_type, "bytes": len(brand.logo or b""),
                "source_url": brand.logo_source_url or None, "url": _served_url(partner, f"/brand/{version}/logo")}
    return {
        "brand_name": brand.brand_name if brand else "",
        "primary": _fill(branding.brand_primary(brand)) if brand else None,
        "secondary": _fill(branding.brand_secondary(brand)) if brand else None,
        "logo": logo,
        "stylesheet_url": _served_url(partner, f"/brand/{version}/style.css"),
        "updated_at": brand.updated_at if brand else None,
    }


class WebmailBrandingApi(_WebmailApi):
    parser_classes = [JSONParser]

    @extend_schema(tags=TAGS, responses={200: BrandingOutput}, summary="The webmail brand",
                   description=SESSION_NOTE + "Defaults (empty name, null colours and logo) until saved.")
    def get(self, request):
        partner = self.partner
        return Response(BrandingOutput(branding_record(partner, branding.brand_get(partner=partner))).data)

    @extend_schema(
        tags=TAGS, request=BrandingInput, responses={200: BrandingOutput}, summary="Save the webmail brand",
        description=SESSION_NOTE + WRITE_NOTE + "Fields left out stay as they are. Colours are #rrggbb, or a "
        "linear gradient given as color, gradient_to and angle: never CSS text. 422 names the field (including "
        "a logo_url that cannot be fetched or is not a PNG, JPEG, GIF or WebP image).",
        examples=[OpenApiExample("Name, gradient and logo", request_only=True, value={
            "brand_name": "Acme Mail", "primary": {"color": "#1d4ed8", "gradient_to": "#9333ea", "angle": 135},
            "secondary": {"color": "#f59e0b"}, "logo_url": "https://acme.example/logo.png"})],
    )
    def patch(self, request):
        partner = self.writable_partner()
        data = BrandingInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        if fields.get("logo_url") == "":
            fields.pop("logo_url")
        brand = branding.brand_update(partner=partner, **fields)
        return Response(BrandingOutput(branding_record(partner, brand)).data)


class ImageBodyParser(BaseParser):
    """A raw image body (Content-Type: image/png, image/jpeg, image/gif or image/webp)."""

    media_type = "image/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return {"file": stream.read(branding.LOGO_MAX_BYTES + 1) if stream is not None else b""}


class WebmailLogoApi(_WebmailApi):
    parser_classes = [ImageBodyParser, MultiPartParser]

    @extend_schema(
        tags=TAGS, summary="Upload the webmail logo",
        request={"image/png": {"type": "string", "format": "binary"},
                 "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string",
                                                                                   "format": "binary"}},
                                         "required": ["file"]}},
        responses={200: BrandingOutput},
        description=SESSION_NOTE + WRITE_NOTE + "The image itself as the body (Content-Type image/png, image/jpeg, "
        "image/gif or image/webp), or a multipart form with `file`. At most 2 MB and 16 million pixels (8000 a "
        "side); it is re-encoded to PNG or WebP of at most 512 pixels a side, without its metadata. 422 otherwise.",
    )
    def put(self, request):
        partner = self.writable_partner()
        declared = request.META.get("CONTENT_LENGTH", "")
        if declared.isdigit() and int(declared) > branding.LOGO_MAX_BYTES + 64 * 1024:
            raise serializers.ValidationError({"file": [f"The logo is larger than "
                                                        f"{branding.LOGO_MAX_BYTES // (1024 * 1024)} MB."]})
        upload = request.data.get("file")
        if upload is None:
            raise serializers.ValidationError({"file": ["Send the image as the body, or as `file` in a form."]})
        data = upload if isinstance(upload, bytes) else upload.read(branding.LOGO_MAX_BYTES + 1)
        logo = branding.logo_reencode(data, field="file")
        brand = branding.brand_update(partner=partner, logo=logo)
        return Response(BrandingOutput(branding_record(partner, brand)).data)

    @extend_schema(tags=TAGS, request=None, responses={200: BrandingOutput}, summary="Remove the webmail logo",
                   description=SESSION_NOTE + WRITE_NOTE)
    def delete(self, request):
        partner = self.writable_partner()
        brand = branding.brand_update(partner=partner, logo=None)
        return Response(BrandingOutput(branding_record(partner, brand)).data)


# --- the hostname ------------------------------------------------------------------------------


class HostnameInput(StrictInput):
    hostname = serializers.CharField(max_length=300, help_text="e.g. webmail.example.com (IDN allowed)")


class CnameRecordOutput(serializers.Serializer):
    type = serializers.CharField()
    host = serializers.CharField()
    value = serializers.CharField()


class HostnameOutput(serializers.Serializer):
    hostname = serializers.CharField(help_text="Lower-case, ASCII (IDNA) form")
    status = serializers.ChoiceField(choices=["pending", "verified", "paused"],
                                     help_text="pending: checked in the background; verified: served with the "
                                               "brand; paused: a week without success, checks stopped (POST check)")
    verified_at = serializers.DateTimeField(allow_null=True)
    last_checked_at = serializers.DateTimeField(allow_null=True)
    next_check_at = serializers.DateTimeField(allow_null=True)
    problem = serializers.CharField(allow_null=True, help_text="What DNS answers instead, in words; null when right")
    dns_record = CnameRecordOutput(help_text="The record to create at the hostname's DNS provider")
    webmail_url = serializers.CharField()


def hostname_record(row: WebmailHostname) -> dict:
    return {"hostname": row.hostname, "status": hostnames.hostname_status(row), "verified_at": row.verified_at,
            "last_checked_at": row.last_checked_at, "next_check_at": row.next_check_at,
            "problem": row.check_problem or None,
            "dns_record": {"type": "CNAME", "host": row.hostname, "value": settings.WEBMAIL_HOST},
            "webmail_url": f"https://{row.hostname}/"}


def _hostname_or_404(partner: HostingPartner) -> WebmailHostname:
    row = hostnames.hostname_get(partner=partner)
    if row is None:
        raise exceptions.NotFound("No webmail hostname yet: PUT one.")
    return row


class WebmailDomainApi(_WebmailApi):
    parser_classes = [JSONParser]

    @extend_schema(tags=TAGS, responses={200: HostnameOutput, 404: OpenApiResponse(description="None claimed")},
                   summary="The custom webmail hostname", description=SESSION_NOTE)
    def get(self, request):
        return Response(HostnameOutput(hostname_record(_hostname_or_404(self.partner))).data)

    @extend_schema(
        tags=TAGS, request=HostnameInput, responses={200: HostnameOutput, 201: HostnameOutput},
        summary="Claim or replace the custom webmail hostname",
        description=SESSION_NOTE + WRITE_NOTE + "One per partner: a new name replaces the old one (which stops "
        "being served at once). Point a CNAME record from the name to the platform's webmail host (dns_record); "
        "it turns verified by itself once DNS answers, and a certificate is issued on the first HTTPS visit. "
        "201 for a new name, 200 when it is the name already claimed. 422: not a hostname, or one of the "
        "platform's own names. 409: claimed by another account.",
    )
    def put(self, request):
        partner = self.writable_partner()
        data = HostnameInput(data=request.data)
        data.is_valid(raise_exception=True)
        before = hostnames.hostname_get(partner=partner)
        row = hostnames.webmail_hostname_claim(partner=partner, hostname=data.validated_data["hostname"])
        created = before is None or before.pk != row.pk
        return Response(HostnameOutput(hostname_record(row)).data, status=201 if created else 200)

    @extend_schema(tags=TAGS, request=None, responses={204: None}, summary="Give up the custom webmail hostname",
                   description=SESSION_NOTE + "Allowed whatever the account's status; 404 if there is none.")
    def delete(self, request):
        if not hostnames.webmail_hostname_remove(partner=self.partner):
            raise exceptions.NotFound("No webmail hostname to remove.")
        return Response(status=204)


class WebmailDomainCheckApi(_WebmailApi):
    @extend_schema(tags=TAGS, request=None, responses={200: HostnameOutput}, summary="Check the hostname's DNS now",
                   description=SESSION_NOTE + "Looks the CNAME up now (and restarts background checks that had "
                   "paused); problem says what DNS answered instead.")
    def post(self, request):
        row = _hostname_or_404(self.partner)
        return Response(HostnameOutput(hostname_record(hostnames.webmail_hostname_check(hostname=row,
                                                                                        resume=True))).data)
