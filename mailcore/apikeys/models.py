"""API keys (integrators, scoped) and session tokens (browser and mobile clients)."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from mailcore.accounts.models import Account


class ApiKey(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="api_keys")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    name = models.CharField(max_length=100)
    key_prefix = models.CharField(max_length=32, unique=True)
    key_digest = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    allowed_ips = models.JSONField(null=True, blank=True)
    blocked_ips = models.JSONField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix})"

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


class ApiKeyDailyUsage(models.Model):
    """Requests a key made on one UTC day; written in batches, never per request."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="daily_usage")
    date = models.DateField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["api_key", "date"], name="apikey_usage_one_row_a_day")]


class SessionToken(models.Model):
    """A bearer token from POST /auth/login for session-only endpoints."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_tokens")
    token_prefix = models.CharField(max_length=32, unique=True)
    token_digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    credential_stamp = models.CharField(
        max_length=64, blank=True,
        help_text="The user's session hash (Django's, of the password) when issued; a new password ends it.")

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]
