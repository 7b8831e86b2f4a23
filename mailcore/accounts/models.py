"""Accounts (the customer), their users, plans held as data, and hosting partner profiles."""
from django.contrib.auth.models import AbstractUser, UserManager
from django.db import models


class Plan(models.Model):
    """A plan's features and quotas are rows, so gates read data instead of branching on names."""

    FEATURES = {
        "webhooks": "Webhooks",
        "contacts": "Contacts",
        "calendar": "Calendar",
        "read_receipts": "Read receipts and open tracking",
        "ai_agent_tools": "AI agent tools",
        "campaigns": "Campaigns",
    }

    code = models.SlugField(max_length=32, unique=True)
    name = models.CharField(max_length=64)
    rank = models.PositiveSmallIntegerField(help_text="Order from cheapest to richest plan.")
    webhooks = models.BooleanField(default=False)
    contacts = models.BooleanField(default=False)
    calendar = models.BooleanField(default=False)
    read_receipts = models.BooleanField(default=False)
    ai_agent_tools = models.BooleanField(default=False)
    campaigns = models.BooleanField(default=False)
    sends_per_day = models.PositiveIntegerField()
    sends_per_hour = models.PositiveIntegerField()
    storage_mb = models.PositiveIntegerField()
    ai_requests_per_day = models.PositiveIntegerField(null=True, blank=True, help_text="Empty means unlimited.")
    attachment_max_mb = models.PositiveIntegerField()
    score_api_sends = models.BooleanField(
        default=True, help_text="Score mail sent through the API (REST, MCP, campaigns) for spam before it leaves, "
        "as owners' mail always is; off exempts an integrator plan's sends (docs/protection.md).")

    class Meta:
        ordering = ["rank"]

    def __str__(self) -> str:
        return self.name

    def has_feature(self, feature: str) -> bool:
        if feature not in self.FEATURES:
            raise KeyError(f"unknown plan feature {feature!r}")
        return bool(getattr(self, feature))

    @property
    def features(self) -> dict[str, bool]:
        return {feature: bool(getattr(self, feature)) for feature in self.FEATURES}

    @property
    def quotas(self) -> dict[str, int | None]:
        return {
            "sends_per_day": self.sends_per_day,
            "sends_per_hour": self.sends_per_hour,
            "storage_mb": self.storage_mb,
            "ai_requests_per_day": self.ai_requests_per_day,
            "attachment_max_mb": self.attachment_max_mb,
        }


class Account(models.Model):
    """The customer: owns mailboxes, domains, templates, keys and webhooks."""

    name = models.CharField(max_length=200)
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="accounts")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class EmailUserManager(UserManager):
    """Users are identified by email; there is no username."""

    use_in_migrations = True

    def _create_user_object(self, username, email, password, **extra_fields):
        email = self.normalize_email(email or username)
        user = self.model(email=email, **extra_fields)
        user.set_password(password)
        return user

    def create_user(self, email=None, password=None, **extra_fields):
        extra_fields.setdefault("is_staff", False)
        extra_fields.setdefault("is_superuser", False)
        user = self._create_user_object(None, email, password, **extra_fields)
        user.save(using=self._db)
        return user

    def create_superuser(self, email=None, password=None, **extra_fields):
        extra_fields.setdefault("is_staff", True)
        extra_fields.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra_fields)


class User(AbstractUser):
    """A person who signs in to the portal or the JSON API on behalf of an account."""

    username = None
    email = models.EmailField("email address", unique=True)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="users", null=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    objects = EmailUserManager()

    def __str__(self) -> str:
        return self.email
