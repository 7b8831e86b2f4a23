from django.db import models

from mailcore.accounts.models import Account, Plan
from mailcore.domains.models import Domain


class Mailbox(models.Model):
    """A service-managed mailbox. Its password hash is in a scheme Dovecot verifies itself."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="mailboxes")
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="mailboxes")
    local_part = models.CharField(max_length=64)
    address = models.CharField(max_length=320, unique=True)
    display_name = models.CharField(max_length=200, blank=True)
    password_hash = models.CharField(max_length=255)
    plan = models.ForeignKey(
        Plan, on_delete=models.PROTECT, null=True, blank=True, help_text="Empty means the account's plan."
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["address"]
        verbose_name_plural = "mailboxes"

    def __str__(self) -> str:
        return self.address

    @property
    def effective_plan(self) -> Plan:
        return self.plan or self.account.plan
