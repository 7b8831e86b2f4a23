"""A partner's webmail brand: its name, its logo (re-encoded by Pillow, uploaded or fetched once from
a public https URL through the webhooks' SSRF-safe resolution) and its two colours, rendered
server-side into the stylesheet its hostname serves. Colours are only ever `#rrggbb` values and
whole-number angles, so nothing a partner types reaches CSS as text.

Saving needs a hosting account in trial or active (the spec's 403 on a pending or expired one)."""
import io
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from PIL import Image, UnidentifiedImageError

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.partners.models import HostingPartner
from mailcore.webhooks.safety import UnresolvableDestination, UnsafeDestination, resolve_destination
from webmail.models import WebmailBrand

BRAND_NAME_MAX = 80
# What a logo may be when it arrives (an upload, or the answer of its URL) ...
LOGO_MAX_BYTES = 2 * 1024 * 1024
LOGO_MAX_SIDE = 8000
LOGO_MAX_PIXELS = 16_000_000
LOGO_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
TOO_MANY_PIXELS = (f"at most {LOGO_MAX_SIDE} pixels a side and {LOGO_MAX_PIXELS // 1_000_000} million in all "
                   "are accepted.")
# ... and what is kept: at most LOGO_BOX pixels a side, PNG or WebP, whichever is smaller.
LOGO_BOX = 512
LOGO_STORED_MAX_BYTES = 512 * 1024
LOGO_FETCH_TIMEOUT_SECONDS = 10
USER_AGENT = "Mailwell-Branding/1"


class BrandingForbidden(DomainError):
    code = ErrorCode.FORBIDDEN


def branding_allowed(partner: HostingPartner) -> None:
    """Saving the brand or the hostname needs a hosting account in trial or active."""
    if partner.is_operational:
        return
    why = {
        HostingPartner.Status.PENDING: "the hosting partner application is still pending approval",
        HostingPartner.Status.EXPIRED: "the hosting account has expired; renew it in the portal's billing page",
        HostingPartner.Status.SUSPENDED: "the hosting account is suspended",
        HostingPartner.Status.REJECTED: "the hosting partner application was declined",
    }.get(partner.status, f"the hosting account is {partner.status}")
    raise BrandingForbidden(f"Webmail branding and hostname cannot be changed: {why}.")


# --- colours -----------------------------------------------------------------------------------


def _hex(value, field: str) -> str:
    text = value.strip().lower() if isinstance(value, str) else ""
    if len(text) != 7 or text[0] != "#" or any(char not in "0123456789abcdef" for char in text[1:]):
        raise InvalidFields({field: "Give a colour as #rrggbb, for example #1d4ed8."})
    return text


@dataclass(frozen=True)
class Fill:
    """A colour (`#rrggbb`), or a linear gradient from `color` to `gradient_to` at `angle` degrees."""

    color: str
    gradient_to: str = ""
    angle: int = 90

    @classmethod
    def parse(cls, color, gradient_to=None, angle=None) -> "Fill":
        """From untrusted values; InvalidFields names `color`, `gradient_to` or `angle`."""
        errors = {}
        try:
            color = _hex(color, "color")
        except InvalidFields as exc:
            errors.update(exc.message_dict)
        if gradient_to not in (None, ""):
            try:
                gradient_to = _hex(gradient_to, "gradient_to")
            except InvalidFields as exc:
                errors.update(exc.message_dict)
        else:
            gradient_to = ""
        if angle is None:
            angle = 90
        if isinstance(angle, bool) or not isinstance(angle, int) or not 0 <= angle <= 360:
            errors["angle"] = ["Give the gradient's angle in whole degrees, from 0 to 360."]
        if errors:
            raise InvalidFields(errors)
        return cls(color, gradient_to, angle)

    @property
    def is_gradient(self) -> bool:
        return bool(self.gradient_to)

    @property
    def css(self) -> str:
        if self.is_gradient:
            return f"linear-gradient({self.angle}deg, {self.color}, {self.gradient_to})"
        return self.color

    @property
    def stops(self) -> list[str]:
        return [self.color, self.gradient_to] if self.is_gradient else [self.color]


def brand_primary(brand: WebmailBrand) -> Fill | None:
    if not brand.primary_color:
        return None
    return Fill(brand.primary_color, brand.primary_gradient_to, brand.primary_gradient_angle)


def brand_secondary(brand: WebmailBrand) -> Fill | None:
    if not brand.secondary_color:
        return None
    return Fill(brand.secondary_color, brand.secondary_gradient_to, brand.secondary_gradient_angle)


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _mix(color: str, other: str, share: float) -> str:
    """`share` of `other` mixed into `color`."""
    mixed = [round(a + (b - a) * share) for a, b in zip(_rgb(color), _rgb(other))]
    return "#" + "".join(f"{value:02x}" for value in mixed)


def _luminance(color: str) -> float:
    def channel(value: int) -> float:
        value /= 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(value) for value in _rgb(color))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(first: str, second: str) -> float:
    """The WCAG contrast ratio of two colours (1 to 21)."""
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


WHITE, INK = "#ffffff", "#101828"


def text_on(fill: Fill) -> str:
    """White or dark text, whichever reads better on every stop of the fill."""
    return max((WHITE, INK), key=lambda text: min(contrast(text, stop) for stop in fill.stops))


def brand_stylesheet(brand: WebmailBrand | None) -> str:
    """The CSS a partner's hostname serves, from the brand's structured fields only. `:root:root`
    and `body` selectors outrank app.css and the webmail's sheets whatever their order."""
    lines = ["/* Webmail brand (generated from the partner's colours). */",
             ".brand__logo { display: block; height: 1.75rem; width: auto; max-width: 10rem; object-fit: contain; }"]
    primary = brand_primary(brand) if brand is not None else None
    secondary = brand_secondary(brand) if brand is not None else None
    if primary is not None:
        on = text_on(primary)
        lines += [
            ":root:root {",
            f"  --primary: {primary.color};",
            f"  --primary-hover: {_mix(primary.color, '#000000', 0.15)};",
            f"  --primary-soft: {_mix(primary.color, '#ffffff', 0.9)};",
            f"  --primary-text: {_mix(primary.color, '#000000', 0.35)};",
            f"  --on-primary: {on};",
            f"  --focus: {primary.color};",
            f"  --brand-fill: {primary.css};",
            "}",
            "@media (prefers-color-scheme: dark) {",
            "  :root:root {",
            f"    --primary-soft: {_mix(primary.color, '#0d1017', 0.8)};",
            f"    --primary-text: {_mix(primary.color, '#ffffff', 0.55)};",
            "  }",
            "}",
            "body .topbar { background: var(--brand-fill); border-bottom-color: transparent; backdrop-filter: none; }",
            "body .topbar .brand, body .topbar .brand:hover, body .topbar .topbar__email,"
            " body .topbar .btn--ghost { color: var(--on-primary); }",
            "body .btn--primary, body .btn--primary:hover { background: var(--brand-fill); color: var(--on-primary); }",
        ]
    if secondary is not None:
        lines += [
            ":root:root {",
            f"  --brand-accent: {secondary.color};",
            f"  --brand-secondary-fill: {secondary.css};",
            f"  --on-brand-secondary: {text_on(secondary)};",
            "}",
            "body.page--entrance { background: var(--brand-secondary-fill) fixed; }",
            "body.page--entrance .checkout__description { color: var(--text); }",
            'body .nav__link[aria-current="page"] { box-shadow: inset 3px 0 0 var(--brand-accent); }',
        ]
    return "\n".join(lines) + "\n"


def brand_preview_style(*, primary: Fill | None, secondary: Fill | None) -> str:
    """The same colours as custom properties for the portal's live preview (an inline style)."""
    parts = []
    if primary is not None:
        parts += [f"--preview-fill: {primary.css}", f"--preview-on: {text_on(primary)}",
                  f"--preview-primary: {primary.color}"]
    if secondary is not None:
        parts += [f"--preview-secondary-fill: {secondary.css}", f"--preview-accent: {secondary.color}"]
    return "; ".join(parts)


# --- the logo ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Logo:
    data: bytes
    content_type: str
    width: int
    height: int


def _refuse(field: str, message: str) -> InvalidFields:
    return InvalidFields({field: message})


def logo_reencode(data: bytes, *, field: str = "logo") -> Logo:
    """Open the bytes with Pillow (PNG, JPEG, GIF or WebP only), refuse oversized or undecodable
    images before decoding them in full, and keep a fresh PNG or WebP of at most LOGO_BOX pixels a
    side, built from the pixels alone (no metadata, colour profile, text chunk or later frame)."""
    if not data:
        raise _refuse(field, "The logo file is empty.")
    if len(data) > LOGO_MAX_BYTES:
        raise _refuse(field, f"The logo is larger than {LOGO_MAX_BYTES // (1024 * 1024)} MB.")
    try:
        with Image.open(io.BytesIO(data), formats=LOGO_FORMATS) as image:
            width, height = image.size
            if width < 1 or height < 1:
                raise _refuse(field, "The logo has no pixels.")
            if width > LOGO_MAX_SIDE or height > LOGO_MAX_SIDE or width * height > LOGO_MAX_PIXELS:
                raise _refuse(field, f"The logo is {width}×{height} pixels; {TOO_MANY_PIXELS}")
            image.seek(0)
            image.load()
            rgba = image.convert("RGBA")
    except InvalidFields:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):  # the warning, where warnings are errors
        raise _refuse(field, f"The logo has far too many pixels: {TOO_MANY_PIXELS}") from None
    except UnidentifiedImageError:
        raise _refuse(field, "The logo is not a PNG, JPEG, GIF or WebP image we can read.") from None
    except (OSError, ValueError, SyntaxError, EOFError, MemoryError):
        raise _refuse(field, "The logo image is damaged or incomplete.") from None
    clean = Image.frombytes("RGBA", rgba.size, rgba.tobytes())  # pixels only: nothing else survives
    clean.thumbnail((LOGO_BOX, LOGO_BOX), Image.Resampling.LANCZOS)
    if clean.getextrema()[3][0] == 255:  # fully opaque: no alpha channel needed
        clean = clean.convert("RGB")
    candidates = []
    for fmt, content_type, options in (("PNG", "image/png", {"optimize": True}),
                                       ("WEBP", "image/webp", {"lossless": True, "method": 4})):
        out = io.BytesIO()
        clean.save(out, fmt, **options)
        candidates.append((len(out.getvalue()), out.getvalue(), content_type))
    size, encoded, content_type = min(candidates, key=lambda candidate: candidate[0])
    if size > LOGO_STORED_MAX_BYTES:
        raise _refuse(field, "The logo is too detailed to keep small; use a simpler image.")
    return Logo(encoded, content_type, clean.width, clean.height)


def _ssl_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    if settings.WEBHOOK_CA_BUNDLE:
        context.load_verify_locations(cafile=settings.WEBHOOK_CA_BUNDLE)
    return context


def logo_fetch(url: str) -> bytes:
    """GET the URL once: https only, to an address the webhooks' resolution accepts (public, checked
    and then pinned, so DNS cannot change in between), no redirects, at most LOGO_MAX_BYTES read."""
    field = "logo_url"
    if not isinstance(url, str) or len(url) > 2048:
        raise _refuse(field, "Give the logo's https URL (at most 2048 characters).")
    try:
        destination = resolve_destination(url, None)
    except UnsafeDestination as exc:
        raise _refuse(field, f"This URL cannot be fetched: {exc}.") from None
    except UnresolvableDestination as exc:
        raise _refuse(field, f"This URL cannot be fetched: {exc}.") from None
    parts = urlsplit(url)
    ip = f"[{destination.ip}]" if ":" in destination.ip else destination.ip
    pinned = f"https://{ip}:{destination.port}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")
    host_header = parts.hostname if destination.port == 443 else f"{parts.hostname}:{destination.port}"
    headers = {"Host": host_header, "User-Agent": USER_AGENT, "Accept": "image/png,image/webp,image/jpeg,image/gif"}
    try:
        with httpx.Client(verify=_ssl_context(), timeout=LOGO_FETCH_TIMEOUT_SECONDS, follow_redirects=False) as client:
            request = client.build_request("GET", pinned, headers=headers,
                                           extensions={"sni_hostname": destination.host})
            response = client.send(request, stream=True)
            try:
                if response.is_redirect:
                    raise _refuse(field, "This URL answers with a redirect; give the image's own address "
                                         "(redirects are not followed).")
                if response.status_code != 200:
                    raise _refuse(field, f"This URL answered {response.status_code}, not an image.")
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > LOGO_MAX_BYTES:
                    raise _refuse(field, f"The image at this URL is larger than "
                                         f"{LOGO_MAX_BYTES // (1024 * 1024)} MB.")
                received = bytearray()
                for chunk in response.iter_bytes():
                    received += chunk
                    if len(received) > LOGO_MAX_BYTES:
                        raise _refuse(field, f"The image at this URL is larger than "
                                             f"{LOGO_MAX_BYTES // (1024 * 1024)} MB.")
            finally:
                response.close()
    except httpx.TimeoutException:
        raise _refuse(field, f"This URL did not answer within {LOGO_FETCH_TIMEOUT_SECONDS} seconds.") from None
    except httpx.HTTPError as exc:
        raise _refuse(field, f"This URL could not be fetched ({exc.__class__.__name__}).") from None
    return bytes(received)


def logo_from_url(url: str) -> Logo:
    return logo_reencode(logo_fetch(url), field="logo_url")


# --- reading and saving ------------------------------------------------------------------------


def brand_get(*, partner: HostingPartner) -> WebmailBrand | None:
    """The partner's brand (None until first saved)."""
    return WebmailBrand.objects.filter(partner=partner).first()


def brand_version(brand: WebmailBrand | None) -> str:
    """Changes whenever the brand is saved: part of the stylesheet's and logo's URLs."""
    if brand is None or brand.updated_at is None:
        return "0"
    return format(int(brand.updated_at.timestamp() * 1000), "x")


UNSET = object()


def brand_update(*, partner: HostingPartner, brand_name=UNSET, primary=UNSET, secondary=UNSET, logo=UNSET,
                 logo_url=UNSET) -> WebmailBrand:
    """Save what is given and keep the rest. primary / secondary: a Fill, or None for the default
    colours. logo: a Logo (already re-encoded), or None to remove it. logo_url: fetched once, now;
    its image replaces the logo. A 403 (BrandingForbidden) unless the account is in trial or active."""
    branding_allowed(partner)
    if brand_name is not UNSET:
        brand_name = (brand_name or "").strip()
        if len(brand_name) > BRAND_NAME_MAX or any(ord(char) < 32 for char in brand_name):
            raise InvalidFields({"brand_name": f"At most {BRAND_NAME_MAX} characters, on one line."})
    if logo_url is not UNSET and logo_url not in (None, ""):
        logo = logo_from_url(logo_url)  # before the transaction: no row is locked while fetching
    with transaction.atomic():
        brand, _ = WebmailBrand.objects.select_for_update().get_or_create(partner=partner)
        if brand_name is not UNSET:
            brand.brand_name = brand_name
        for prefix, fill in (("primary", primary), ("secondary", secondary)):
            if fill is UNSET:
                continue
            setattr(brand, f"{prefix}_color", fill.color if fill else "")
            setattr(brand, f"{prefix}_gradient_to", fill.gradient_to if fill else "")
            setattr(brand, f"{prefix}_gradient_angle", fill.angle if fill else 90)
        if logo is not UNSET:
            brand.logo = logo.data if logo else None
            brand.logo_content_type = logo.content_type if logo else ""
            brand.logo_source_url = logo_url if logo and isinstance(logo_url, str) else ""
        brand.save()
    return brand


def brand_for_hostname(*, partner_id: int) -> WebmailBrand | None:
    """The brand a hostname shows, without the logo's bytes."""
    return WebmailBrand.objects.defer("logo").filter(partner_id=partner_id).first()


def brand_logo(*, partner_id: int) -> tuple[bytes, str] | None:
    row = WebmailBrand.objects.filter(partner_id=partner_id).values_list("logo", "logo_content_type").first()
    if row is None or not row[0]:
        return None
    return bytes(row[0]), row[1]
