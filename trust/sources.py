"""Who a report's source is: its reverse name (PTR, through the kernel's resolver) and whether it is
one of our servers (OUTBOUND_IPS: the addresses and networks our outbound mail leaves from)."""
import dns.exception
import dns.reversename
from django.conf import settings

from mailcore.dnslookup import lookup
from mailcore.ipnets import ip_in_list


def is_our_server(source_ip: str) -> bool:
    return ip_in_list(source_ip, settings.OUTBOUND_IPS)


def reverse_name(source_ip: str) -> str:
    """The PTR name of the address, "" when it has none (or DNS did not answer)."""
    try:
        name = dns.reversename.from_address(source_ip).to_text(omit_final_dot=True)
    except (dns.exception.SyntaxError, ValueError):
        return ""
    answer = lookup(name, "PTR")
    return answer.values[0].rstrip(".").lower()[:253] if answer.values else ""
