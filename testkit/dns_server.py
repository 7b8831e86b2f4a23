"""A real DNS server on loopback (dnslib) serving whatever records a test puts in it."""
import socket
import threading
from dataclasses import dataclass, field

import pytest
from dnslib import CNAME, MX, PTR, QTYPE, RR, TXT, A, DNSLabel
from dnslib.server import BaseResolver, DNSServer


def _txt_chunks(value: str) -> list[bytes]:
    data = value.encode()
    return [data[i : i + 255] for i in range(0, len(data), 255)] or [b""]


@dataclass
class Zone(BaseResolver):
    """records: {(name, type): [value, ...]}; names without the trailing dot."""

    records: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self, name: str, rdtype: str, *values: str) -> None:
        with self.lock:
            self.records[(name.lower().rstrip("."), rdtype)] = list(values)

    def clear(self) -> None:
        with self.lock:
            self.records.clear()

    def resolve(self, request, handler):
        reply = request.reply()
        name = str(request.q.qname).lower().rstrip(".")
        rdtype = QTYPE[request.q.qtype]
        with self.lock:
            values = list(self.records.get((name, rdtype), []))
            exists = any(key[0] == name for key in self.records)
        for value in values:
            if rdtype == "TXT":
                rdata = TXT(_txt_chunks(value))
            elif rdtype == "MX":
                preference, _, host = value.partition(" ")
                rdata = MX(DNSLabel(host), int(preference))
            elif rdtype == "CNAME":
                rdata = CNAME(DNSLabel(value))
            elif rdtype == "PTR":
                rdata = PTR(DNSLabel(value))
            else:
                rdata = A(value)
            reply.add_answer(RR(request.q.qname, request.q.qtype, rdata=rdata, ttl=1))
        if not exists:
            reply.header.rcode = 3  # NXDOMAIN
        return reply


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def _dns_server():
    zone = Zone()
    port = _free_udp_port()
    server = DNSServer(zone, address="127.0.0.1", port=port)
    server.start_thread()
    yield zone, port
    server.stop()


@pytest.fixture
def dns_zone(_dns_server, settings):
    """The loopback DNS server, emptied for this test, and DNS_NAMESERVERS pointing at it."""
    zone, port = _dns_server
    zone.clear()
    settings.DNS_NAMESERVERS = [f"127.0.0.1:{port}"]
    yield zone
    zone.clear()
