"""The partner portal's webmail branding page: the brand (name, logo, colours) with a live preview of
the webmail's sign-in page and header, and the custom webmail hostname (the CNAME to create, where
its check stands, "check now", replace and remove).

It calls the same webmail services as /v1/hosting/webmail. The preview is rendered on the
server from the same structured fields the brand stylesheet is made of: htmx posts the form as it
changes and swaps the preview; without JavaScript the Preview button renders the page with it,
and Save saves.
"""
import base64

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.errors import DomainError, InvalidFields
from webmail import branding, hostnames
from portal.htmx import regions
from portal.partner.access import partner_section
from portal.forms import PortalForm

TEMPLATE = "portal/branding.html"
CONFIRM_TEMPLATE = "portal/branding_confirm.html"
MODES = [("default", "Our default colours"), ("solid", "One colour"), ("gradient", "A gradient")]
ACCEPTED = "image/png,image/jpeg,image/gif,image/webp"
DEFAULTS = {"primary": ("#4f46e5", "#8b5cf6"), "secondary": ("#8b5cf6", "#ec4899")}


class ColourInput(forms.TextInput):
    input_type = "color"


def _mode(label: str) -> forms.ChoiceField:
    return forms.ChoiceField(label=label, choices=MODES, initial="default", widget=forms.RadioSelect)


def _colour(label: str, initial: str) -> forms.CharField:
    """Required only when the colour is used (BrandForm.clean decides)."""
    return forms.CharField(label=label, initial=initial, max_length=7, required=False, widget=ColourInput)


def _angle() -> forms.IntegerField:
    return forms.IntegerField(label="Gradient angle (degrees)", initial=90, min_value=0, max_value=360, required=False,
                              help_text="90 runs left to right, 180 top to bottom.")


class BrandForm(PortalForm):
    brand_name = forms.CharField(label="Brand name", max_length=branding.BRAND_NAME_MAX, required=False,
                                 help_text="Beside the logo and in the browser tab. Empty: just the logo.")
    logo = forms.FileField(label="Logo image", required=False,
                           help_text="PNG, JPEG, GIF or WebP, up to 2 MB. We store a PNG or WebP copy of at most "
                                     "512 pixels a side, without the file's metadata.",
                           widget=forms.ClearableFileInput(attrs={"accept": ACCEPTED}))
    logo_url = forms.URLField(label="…or the logo's address", max_length=2048, required=False, assume_scheme="https",
                              help_text="A public https image URL. We fetch it once, when you save, and keep a copy.")
    remove_logo = forms.BooleanField(label="Remove the logo", required=False)
    primary_mode = _mode("Main colour: top bar and buttons")
    primary_color = _colour("Colour", DEFAULTS["primary"][0])
    primary_gradient_to = _colour("Gradient to", DEFAULTS["primary"][1])
    primary_angle = _angle()
    secondary_mode = _mode("Accent colour: sign-in background and highlights")
    secondary_color = _colour("Colour", DEFAULTS["secondary"][0])
    secondary_gradient_to = _colour("Gradient to", DEFAULTS["secondary"][1])
    secondary_angle = _angle()

    def __init__(self, *args, brand=None, **kwargs):
        if brand is not None and "initial" not in kwargs:
            kwargs["initial"] = _initial(brand)
        super().__init__(*args, **kwargs)

    def _fill(self, prefix: str):
        mode = self.cleaned_data.get(f"{prefix}_mode") or "default"
        if mode == "default":
            return None
        gradient = mode == "gradient"
        try:
            return branding.Fill.parse(self.cleaned_data.get(f"{prefix}_color"),
                                       self.cleaned_data.get(f"{prefix}_gradient_to") if gradient else None,
                                       self.cleaned_data.get(f"{prefix}_angle") if gradient else None)
        except InvalidFields as exc:
            for name, errors in exc.message_dict.items():
                self.add_error(f"{prefix}_{name}", errors)
            return None

    def clean(self):
        data = super().clean()
        data["primary"], data["secondary"] = self._fill("primary"), self._fill("secondary")
        if data.get("logo") and data.get("logo_url"):
            self.add_error("logo_url", "Upload a file or give an address, not both.")
        return data


def _initial(brand) -> dict:
    initial = {"brand_name": brand.brand_name}
    for prefix in ("primary", "secondary"):
        color = getattr(brand, f"{prefix}_color")
        to = getattr(brand, f"{prefix}_gradient_to")
        initial[f"{prefix}_mode"] = "gradient" if to else ("solid" if color else "default")
        initial[f"{prefix}_color"] = color or DEFAULTS[prefix][0]
        initial[f"{prefix}_gradient_to"] = to or DEFAULTS[prefix][1]
        initial[f"{prefix}_angle"] = getattr(brand, f"{prefix}_gradient_angle")
    return initial


class HostnameForm(PortalForm):
    hostname = forms.CharField(label="Webmail hostname", max_length=300,
                               help_text="A name under your own domain, for example webmail.example.com.",
                               widget=forms.TextInput(attrs={"placeholder": "webmail.example.com",
                                                             "autocomplete": "off", "spellcheck": "false"}))


# --- the page ----------------------------------------------------------------------------------


def _saved_logo_src(brand) -> str | None:
    if brand is None or not brand.logo_content_type:
        return None
    return f"{reverse('portal:branding-logo')}?v={branding.brand_version(brand)}"


def _preview(*, brand_name: str, primary, secondary, logo_src: str | None, note: str = "") -> dict:
    return {"name": brand_name, "logo_src": logo_src, "note": note,
            "style": branding.brand_preview_style(primary=primary, secondary=secondary)}


def _saved_preview(brand) -> dict:
    if brand is None:
        return _preview(brand_name="", primary=None, secondary=None, logo_src=None)
    return _preview(brand_name=brand.brand_name, primary=branding.brand_primary(brand),
                    secondary=branding.brand_secondary(brand), logo_src=_saved_logo_src(brand))


def _form_preview(form: BrandForm, brand) -> dict:
    """The preview of what the form would save (nothing is saved; a URL logo is not fetched)."""
    data = form.cleaned_data if form.is_valid() else {}
    if not data:
        return {**_saved_preview(brand), "note": "Some fields need fixing; the preview shows what is saved."}
    logo_src, note = _saved_logo_src(brand), ""
    if data.get("remove_logo"):
        logo_src = None
    if data.get("logo"):
        data["logo"].seek(0)  # a save that was refused may have read it already
        try:
            logo = branding.logo_reencode(data["logo"].read(branding.LOGO_MAX_BYTES + 1))
        except InvalidFields as exc:
            note = " ".join(exc.message_dict.get("logo", []))
        else:
            logo_src = f"data:{logo.content_type};base64,{base64.b64encode(logo.data).decode()}"
    elif data.get("logo_url"):
        note = "The logo at that address is fetched when you save."
    return _preview(brand_name=data.get("brand_name", ""), primary=data.get("primary"),
                    secondary=data.get("secondary"), logo_src=logo_src, note=note)


def _context(partner, *, form: BrandForm | None = None, hostname_form: HostnameForm | None = None,
             preview: dict | None = None, **extra) -> dict:
    brand = branding.brand_get(partner=partner)
    row = hostnames.hostname_get(partner=partner)
    return {
        "brand": brand,
        "form": form or BrandForm(brand=brand),
        "preview": preview or _saved_preview(brand),
        "hostname": row,
        "hostname_status": hostnames.hostname_status(row) if row else None,
        "hostname_form": hostname_form or HostnameForm(),
        "webmail_host": settings.WEBMAIL_HOST,
        **extra,
    }


@require_http_methods(["GET", "POST"])
@partner_section
def branding_page(request, partner):
    """GET shows the brand and hostname; POST saves the brand (or, with action=preview, only shows it)."""
    if request.method == "GET":
        return render(request, TEMPLATE, _context(partner))
    brand = branding.brand_get(partner=partner)
    form = BrandForm(request.POST, request.FILES, brand=brand)
    if request.POST.get("action") == "preview":
        return render(request, TEMPLATE, _context(partner, form=form, preview=_form_preview(form, brand)))
    if form.is_valid():
        data = form.cleaned_data
        changes = {"brand_name": data["brand_name"], "primary": data["primary"], "secondary": data["secondary"]}
        try:
            if data.get("logo"):
                changes["logo"] = branding.logo_reencode(data["logo"].read(branding.LOGO_MAX_BYTES + 1))
            elif data.get("logo_url"):
                changes["logo_url"] = data["logo_url"]
            elif data.get("remove_logo"):
                changes["logo"] = None
            branding.brand_update(partner=partner, **changes)
        except InvalidFields as exc:
            form.add_service_error(exc)
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, "Brand saved. Your customers see it on your webmail hostname from now on.")
            return redirect("portal:branding")
    return render(request, TEMPLATE, _context(partner, form=form, preview=_form_preview(form, brand)), status=422)


@require_POST
@partner_section
def branding_preview(request, partner):
    """htmx: the preview region for the form as it stands (nothing saved)."""
    brand = branding.brand_get(partner=partner)
    form = BrandForm(request.POST, request.FILES, brand=brand)
    return render(request, f"{TEMPLATE}#brand-preview", {"preview": _form_preview(form, brand)})


@require_GET
@partner_section
def branding_logo(request, partner):
    """The partner's saved logo, for its own preview (its hostname serves it to everyone)."""
    brand = branding.brand_get(partner=partner)
    if brand is None or not brand.logo_content_type:
        raise Http404("No logo saved.")
    response = HttpResponse(bytes(brand.logo), content_type=brand.logo_content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    response["Cache-Control"] = "private, max-age=31536000"
    return response


# --- the hostname ------------------------------------------------------------------------------


def _hostname_answer(request, partner, *, status: int = 200, **extra):
    context = _context(partner, **extra)
    if request.htmx:
        return regions(request, TEMPLATE, ["hostname-card"], context)
    return render(request, TEMPLATE, context, status=status)


@require_POST
@partner_section
def hostname_claim(request, partner):
    form = HostnameForm(request.POST)
    if form.is_valid():
        try:
            row = hostnames.webmail_hostname_claim(partner=partner, hostname=form.cleaned_data["hostname"])
        except InvalidFields as exc:
            form.add_service_error(exc)
        except DomainError as exc:
            form.add_error("hostname", exc.detail)
        else:
            messages.success(request, f"{row.hostname} saved. Create its CNAME record below; we check it every few "
                                      "minutes and turn it on by ourselves.")
            if request.htmx:
                return regions(request, TEMPLATE, ["hostname-card"], _context(partner))
            return redirect(f"{reverse('portal:branding')}#hostname-card")
    return _hostname_answer(request, partner, hostname_form=form, status=422,
                            editing_hostname=True)


@require_POST
@partner_section
def hostname_check(request, partner):
    row = hostnames.hostname_get(partner=partner)
    if row is None:
        raise Http404("No webmail hostname.")
    was = row.verified_at is not None
    row = hostnames.webmail_hostname_check(hostname=row, resume=True)
    if not request.htmx:
        if row.verified_at and not was:
            messages.success(request, f"{row.hostname} is verified: your customers can sign in there now.")
        elif row.verified_at:
            messages.success(request, f"{row.hostname} points to us.")
        else:
            messages.warning(request, f"{row.hostname} is not verified yet: {row.check_problem}")
        return redirect(f"{reverse('portal:branding')}#hostname-card")
    return _hostname_answer(request, partner, checked_at=timezone.now(),
                            just_verified=bool(row.verified_at and not was))


@require_http_methods(["GET", "POST"])
@partner_section
def hostname_remove(request, partner):
    """GET asks for confirmation (without JavaScript); POST gives the hostname up."""
    row = hostnames.hostname_get(partner=partner)
    if row is None:
        raise Http404("No webmail hostname.")
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"hostname": row})
    hostnames.webmail_hostname_remove(partner=partner)
    messages.success(request, f"{row.hostname} removed. Its webmail stops at once; its CNAME record can go.")
    url = f"{reverse('portal:branding')}#hostname-card"
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
