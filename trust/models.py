"""Reports kept per hosted domain: DMARC aggregate reports with a row per sending source, TLS-RPT
reports with their counts, the alerts already raised, and the monthly report's switch and runs."""
from django.db import models


class DmarcReport(models.Model):
    """One aggregate report (RFC 7489 appendix C): the same organisation's report id is one report."""

    domain = models.ForeignKey("mailcore.Domain", on_delete=models.CASCADE, related_name="dmarc_reports")
    org_name = models.CharField(max_length=200)
    report_id = models.CharField(max_length=200)
    reporter_email = models.CharField(max_length=254, blank=True)
    begin_at = models.DateTimeField()
    end_at = models.DateTimeField()
    policy_domain = models.CharField(max_length=253)
    policy = models.CharField(max_length=16, help_text="The published p= the receiver saw: none, quarantine, reject.")
    policy_pct = models.PositiveSmallIntegerField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-begin_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["domain", "org_name", "report_id"], name="trust_dmarc_report_once")]
        indexes = [models.Index(fields=["domain", "begin_at"])]


class DmarcSource(models.Model):
    """A report's row: messages from one source IP with one set of results."""

    report = models.ForeignKey(DmarcReport, on_delete=models.CASCADE, related_name="sources")
    source_ip = models.GenericIPAddressField()
    reverse_name = models.CharField(max_length=253, blank=True, help_text="PTR, looked up when the report arrived.")
    ours = models.BooleanField(help_text="One of our servers (OUTBOUND_IPS), else an outside sender.")
    count = models.PositiveIntegerField()
    disposition = models.CharField(max_length=16)
    dkim_aligned = models.BooleanField(help_text="policy_evaluated dkim = pass")
    spf_aligned = models.BooleanField(help_text="policy_evaluated spf = pass")
    dkim_result = models.CharField(max_length=16, blank=True, help_text="auth_results: pass if any signature passed")
    spf_result = models.CharField(max_length=16, blank=True)
    header_from = models.CharField(max_length=253)

    class Meta:
        ordering = ["-count", "id"]

    @property
    def aligned(self) -> bool:
        """DMARC passes when either SPF or DKIM passed aligned with the From domain."""
        return self.dkim_aligned or self.spf_aligned


class TlsReport(models.Model):
    """One SMTP TLS report (RFC 8460) about connections to the domain's MX."""

    domain = models.ForeignKey("mailcore.Domain", on_delete=models.CASCADE, related_name="tls_reports")
    org_name = models.CharField(max_length=200)
    report_id = models.CharField(max_length=200)
    begin_at = models.DateTimeField()
    end_at = models.DateTimeField()
    successes = models.PositiveIntegerField()
    failures = models.PositiveIntegerField()
    failure_details = models.JSONField(default=list, help_text="[{result_type, sending_mta_ip, receiving_mx_hostname, "
                                                               "count}]")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-begin_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["domain", "org_name", "report_id"], name="trust_tls_report_once")]


class DmarcAlert(models.Model):
    """An alert raised (event domain.dmarc_alert): one per domain, kind and source in each period."""

    class Kind(models.TextChoices):
        UNKNOWN_SOURCE = "unknown_source", "An outside source sends as the domain and fails DMARC"
        OUR_SERVER_FAILING = "our_server_failing", "One of our servers fails DMARC for the domain"

    domain = models.ForeignKey("mailcore.Domain", on_delete=models.CASCADE, related_name="dmarc_alerts")
    kind = models.CharField(max_length=24, choices=Kind.choices)
    source_ip = models.GenericIPAddressField()
    period_start = models.DateField()
    report = models.ForeignKey(DmarcReport, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["domain", "kind", "source_ip", "period_start"],
                                               name="trust_dmarc_alert_once")]


class MonthlyReportSetting(models.Model):
    """The partner's switch for a client domain's monthly report, and where it goes."""

    domain = models.OneToOneField("mailcore.Domain", on_delete=models.CASCADE, related_name="monthly_report")
    enabled = models.BooleanField(default=False)
    send_to = models.EmailField(blank=True, help_text="The client's contact address.")
    updated_at = models.DateTimeField(auto_now=True)


class MonthlyReportRun(models.Model):
    """A domain's report for one month: claimed before it is sent, marked sent after; the unique
    month makes a second claim impossible, so no month is sent twice."""

    domain = models.ForeignKey("mailcore.Domain", on_delete=models.CASCADE, related_name="monthly_report_runs")
    month = models.DateField(help_text="The first day of the month the report covers.")
    claimed_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    sent_to = models.EmailField(blank=True)

    class Meta:
        ordering = ["-month"]
        constraints = [models.UniqueConstraint(fields=["domain", "month"], name="trust_monthly_report_once")]
