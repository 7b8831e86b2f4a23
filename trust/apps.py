from django.apps import AppConfig

from mailcore.sweep import Job


class TrustConfig(AppConfig):
    """Domain trust: the DMARC aggregate and TLS-RPT reports receivers send to each hosted domain,
    read into per-domain figures, alerts, a policy advisor and a monthly report for the client."""

    name = "trust"
    verbose_name = "Domain trust"
    jobs = (Job("dmarc-monthly-reports", "trust.monthly:monthly_reports_send", 3600),)

    def ready(self) -> None:
        from mailcore.inbound.reports import report_received
        from trust.intake import report_receive

        report_received.register(report_receive)
