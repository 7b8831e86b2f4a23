"""A hosting partner's webmail brand and its own webmail hostname (one each per partner)."""
from django.db import models


class WebmailBrand(models.Model):
    """What a partner's customers see on the partner's webmail hostname. Colours are `#rrggbb`, or a
    linear gradient given as structured fields (never raw CSS); the logo is stored re-encoded."""

    partner = models.OneToOneField("mailcore.HostingPartner", on_delete=models.CASCADE, related_name="webmail_brand")
    brand_name = models.CharField(max_length=80, blank=True)
    logo = models.BinaryField(null=True, blank=True, help_text="Re-encoded by Pillow (PNG or WebP).")
    logo_content_type = models.CharField(max_length=32, blank=True)
    logo_source_url = models.URLField(max_length=2048, blank=True, help_text="Fetched once, when saved.")
    primary_color = models.CharField(max_length=7, blank=True)
    primary_gradient_to = models.CharField(max_length=7, blank=True, help_text="Set: a gradient from primary_color.")
    primary_gradient_angle = models.PositiveSmallIntegerField(default=90)
    secondary_color = models.CharField(max_length=7, blank=True)
    secondary_gradient_to = models.CharField(max_length=7, blank=True)
    secondary_gradient_angle = models.PositiveSmallIntegerField(default=90)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "mailcore_webmailbrand"


class WebmailHostname(models.Model):
    """The partner's own webmail hostname: a CNAME to WEBMAIL_HOST, verified by background checks."""

    partner = models.OneToOneField("mailcore.HostingPartner", on_delete=models.CASCADE,
                                   related_name="webmail_hostname")
    hostname = models.CharField(max_length=253, unique=True, help_text="Lowercase, ASCII (IDNA), no trailing dot.")
    verified_at = models.DateTimeField(null=True, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True)
    check_problem = models.CharField(max_length=300, blank=True, help_text="Why it is not verified yet, in words.")
    pending_since = models.DateTimeField(null=True, blank=True,
                                         help_text="Unverified since (claimed, or lost its DNS); checks stop a week on.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_webmailhostname"
        indexes = [models.Index(fields=["next_check_at"])]

    @property
    def is_verified(self) -> bool:
        return self.verified_at is not None
