"""The pieces of a receiving domain that publishes MTA-STS, on loopback, for the private Postfix to meet:
a nameserver on port 53 of a loopback address of its own (glibc's and c-ares' resolv.conf take no port)
serving the test's Zone, an HTTPS server answering https://mta-sts.<domain>/.well-known/mta-sts.txt by
Host on port 443 of another, and Debian's postfix-mta-sts-resolver, the daemon production runs, started
in a mount namespace of its own where /etc/resolv.conf names that nameserver and trusting the test's CA
(SSL_CERT_FILE: aiohttp verifies with OpenSSL's default paths). Nothing of the machine's DNS changes."""
import random
import socket
import ssl
import subprocess
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme
from dnslib.server import DNSServer

from testkit.smtp_sink import free_port

RESOLVER = "/usr/bin/mta-sts-daemon"
INSTALL_HINT = "run scripts/install-system-deps.sh (postfix-mta-sts-resolver)"


def loopback_address() -> str:
    """An unused 127.x.y.z, so port 53 and 443 there are ours whatever else runs on the machine."""
    for _ in range(20):
        address = f"127.{random.randint(64, 250)}.{random.randint(1, 250)}.{random.randint(2, 250)}"
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind((address, 53))
            except OSError:
                continue
        return address
    raise AssertionError("no free loopback address")


@contextmanager
def nameserver(zone, directory: Path):
    """The Zone on <loopback address>:53; yields a resolv.conf naming it."""
    address = loopback_address()
    server = DNSServer(zone, address=address, port=53)
    server.start_thread()
    resolv_conf = directory / "resolv.conf"
    resolv_conf.write_text(f"nameserver {address}\noptions attempts:1 timeout:2\n")
    try:
        yield resolv_conf
    finally:
        server.stop()


@contextmanager
def policy_server(authority: trustme.CA, policies: dict[str, str]):
    """HTTPS on <loopback address>:443 with a certificate for each mta-sts.<domain> in `policies`
    (domain -> policy text); yields the address."""
    address = loopback_address()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert(*(f"mta-sts.{domain}" for domain in policies)).configure_cert(context)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            host = self.headers.get("Host", "").lower()
            domain = host.removeprefix("mta-sts.")
            policy = policies.get(domain) if host.startswith("mta-sts.") else None
            if self.path != "/.well-known/mta-sts.txt" or policy is None:
                self.send_error(404)
                return
            body = policy.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer((address, 443), Handler)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield address
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def mta_sts_resolver(*, resolv_conf: Path, ca_file: Path, directory: Path):
    """postfix-mta-sts-resolver on 127.0.0.1 (a fresh in-memory cache); yields (port, log path)."""
    if not Path(RESOLVER).exists():
        pytest.fail(f"postfix-mta-sts-resolver is not installed: {INSTALL_HINT}.", pytrace=False)
    port = free_port()
    config, log = directory / "mta-sts-daemon.yml", directory / "mta-sts-daemon.log"
    config.write_text(f"host: 127.0.0.1\nport: {port}\nreuse_port: true\nshutdown_timeout: 1\n"
                      "cache:\n  type: internal\n  options:\n    cache_size: 100\n"
                      "default_zone:\n  strict_testing: false\n  timeout: 4\n")
    process = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount --bind "$0" /etc/resolv.conf && exec "$1" -v debug -c "$2" -l "$3"',
         str(resolv_conf), RESOLVER, str(config), str(log)],
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE": str(ca_file)})
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    text = log.read_text() if log.exists() else ""
                    raise AssertionError(f"mta-sts-daemon did not listen on {port}\n{text[-3000:]}") from None
                time.sleep(0.1)
        yield port, log
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
