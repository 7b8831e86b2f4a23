"""Campaigns: a send to an audience (a client's contacts, a group, a segment) that grows into a drip
sequence of steps. One enrolment per (campaign, contact) and one delivery per (enrolment, step):
the delivery row is the unit of exactly-once (claimed, sent through mail_send and marked in one
transaction), and its due time is the enrolment time plus the delays of the steps up to it."""
from django.db import models
from django.db.models import Q


class Campaign(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"  # editable; nothing sent
        SENDING = "sending", "Sending"  # enrolled; due deliveries go out
        PAUSED = "paused", "Paused"  # nothing goes out until resumed
        COMPLETED = "completed", "Completed"  # every enrolment finished its steps
        CANCELLED = "cancelled", "Cancelled"

    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="campaigns")
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, related_name="campaigns",
                                help_text="The sending mailbox; from_email is one of its addresses.")
    book = models.ForeignKey("contacts.AddressBook", on_delete=models.CASCADE, related_name="campaigns")
    name = models.CharField(max_length=200)
    from_email = models.CharField(max_length=320)
    group = models.ForeignKey("contacts.ContactGroup", on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="campaigns")
    segment_filter = models.JSONField(default=list, blank=True)
    postal_address = models.TextField(blank=True, help_text="The sender's postal address, shown in every footer "
                                      "(required by anti-spam laws before sending).")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "mailcore_campaign"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status"])]

    def __str__(self) -> str:
        return self.name


class CampaignStep(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveIntegerField(help_text="1 for the first step, in sending order.")
    delay_hours = models.PositiveIntegerField(default=0, help_text="Hours after the previous step (or enrolment).")
    subject = models.CharField(max_length=998)
    subject_b = models.CharField(max_length=998, blank=True, help_text="The A/B variant's subject; empty: no test.")
    ab_split_percent = models.PositiveSmallIntegerField(default=50, help_text="Percent of contacts that get subject A.")
    body_html = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_campaignstep"
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["campaign", "position"], name="campaignstep_position_unique")]

    def __str__(self) -> str:
        return f"{self.campaign} step {self.position}"


class Enrollment(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"  # got every step
        STOPPED = "stopped", "Stopped"  # unsubscribed, suppressed, bounced, complained, or removed

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="enrollments")
    contact = models.ForeignKey("contacts.Contact", on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="enrollments")
    email = models.CharField(max_length=320, help_text="The address at enrolment (the contact may change later).")
    name = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    stop_reason = models.CharField(max_length=32, blank=True)
    enrolled_at = models.DateTimeField()

    class Meta:
        db_table = "mailcore_enrollment"
        constraints = [models.UniqueConstraint(fields=["campaign", "email"], name="enrollment_once_per_address")]
        indexes = [models.Index(fields=["campaign", "status"])]


class StepDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"  # waits for due_at
        SENT = "sent", "Sent"  # handed to mail_send (an OutboundMessage exists)
        SKIPPED = "skipped", "Skipped"  # suppressed or stopped before it was due
        FAILED = "failed", "Failed"  # refused by mail_send for good

    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="deliveries")
    step = models.ForeignKey(CampaignStep, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    due_at = models.DateTimeField()
    variant = models.CharField(max_length=1, blank=True, help_text="a or b: the subject this contact got.")
    outbound = models.OneToOneField("mailcore.OutboundMessage", on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="campaign_delivery")
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    # What became of it (stats per step and variant); each set once, by the event that shows it.
    delivered_at = models.DateTimeField(null=True, blank=True)
    bounced_at = models.DateTimeField(null=True, blank=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    clicked_at = models.DateTimeField(null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    complained_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "mailcore_stepdelivery"
        constraints = [models.UniqueConstraint(fields=["enrollment", "step"], name="stepdelivery_once")]
        indexes = [models.Index(fields=["status", "due_at"]), models.Index(fields=["step", "status"])]


class Suppression(models.Model):
    """An address no campaign mail goes to: per hosting partner's account, or platform-wide (account empty)."""

    class Reason(models.TextChoices):
        UNSUBSCRIBED = "unsubscribed", "Unsubscribed"
        HARD_BOUNCE = "hard_bounce", "Hard bounce"
        SOFT_BOUNCES = "soft_bounces", "Repeated soft bounces"
        COMPLAINT = "complaint", "Spam complaint"
        MANUAL = "manual", "Added by hand"

    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, null=True, blank=True,
                                related_name="suppressions", help_text="Empty: platform-wide.")
    email = models.CharField(max_length=320)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    campaign = models.ForeignKey(Campaign, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_suppression"
        constraints = [
            models.UniqueConstraint(fields=["account", "email"], name="suppression_once_per_account"),
            models.UniqueConstraint(fields=["email"], condition=Q(account__isnull=True), name="suppression_once_platform"),
        ]
        indexes = [models.Index(fields=["email"])]
