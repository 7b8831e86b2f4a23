"""A hosted domain's records as its owner publishes them, for tests that need them in the loopback DNS."""
from django.conf import settings

from mailcore.domains.models import Domain
from mailcore.domains.mta_sts import mta_sts_record_value


def publish_transport_security(zone, name: str) -> None:
    """The MTA-STS record (the current policy's id), the policy host's CNAME and the TLS-RPT record."""
    domain = Domain.objects.get(name=name)
    zone.set(f"_mta-sts.{name}", "TXT", mta_sts_record_value(domain))
    zone.set(f"mta-sts.{name}", "CNAME", settings.WEBMAIL_HOST)
    zone.set(f"_smtp._tls.{name}", "TXT", f"v=TLSRPTv1; rua=mailto:tls-reports@{name}")
