"""A real HTTPS webhook receiver on loopback (certificate from trustme) that checks signatures
with its own code, as a customer's receiver would."""
import hashlib
import hmac
import json
import ssl
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trustme


@dataclass
class Hit:
    path: str
    host: str
    body: bytes
    signature: str
    signature_valid: bool
    received_at: float
    delivery: str = ""

    @property
    def envelope(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    port: int
    ca_path: str
    secret: str = ""
    status: int = 200
    delay: float = 0.0
    body: bytes = b"ok"
    headers: dict = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)

    def url(self, path: str = "/hook", host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"


def verify(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """The receiver's own check: t within tolerance, v1 = HMAC-SHA256(secret, "t.body"), constant time."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
    except (ValueError, KeyError):
        return False
    if abs(time.time() - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))


@contextmanager
def https_receiver(tmp_path):
    authority = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    ca_path = tmp_path / "receiver-ca.pem"
    authority.cert_pem.write_to_path(str(ca_path))
    state: dict = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            receiver: Receiver = state["receiver"]
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            signature = self.headers.get("X-Service-Signature", "")
            receiver.hits.append(Hit(self.path, self.headers.get("Host", ""), body, signature,
                                     verify(receiver.secret, signature, body), time.monotonic(),
                                     self.headers.get("X-Service-Delivery", "")))
            if receiver.delay:
                time.sleep(receiver.delay)
            self.send_response(receiver.status)
            for name, value in receiver.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(receiver.body)))
            self.end_headers()
            self.wfile.write(receiver.body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state["receiver"] = Receiver(port=server.server_address[1], ca_path=str(ca_path))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["receiver"]
    finally:
        server.shutdown()
        server.server_close()
