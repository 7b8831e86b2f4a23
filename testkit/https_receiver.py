"""A real HTTPS webhook receiver on loopback (certificate from trustme) that checks signatures
with its own code, as a customer's receiver would."""
import asyncio
import hashlib
import hmac
import json
import ssl
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
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
    connection: int = 0  # which TCP connection carried it: 1 for the receiver's first, and so on

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
    connections: int = 0  # TCP connections accepted so far
    hold: threading.Event | None = None  # when given, answers wait until it is set

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
def https_receiver(tmp_path, *, keep_alive: bool = False):
    """By default HTTP/1.0, one request per connection, a thread per connection. With keep_alive,
    HTTP/1.1 with many requests per connection on an event loop in one thread, as production
    receivers work (threads of one Python process slow each other down as connections grow)."""
    authority = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    ca_path = tmp_path / "receiver-ca.pem"
    authority.cert_pem.write_to_path(str(ca_path))
    if keep_alive:
        with _keep_alive_receiver(context, str(ca_path)) as receiver:
            yield receiver
        return
    state: dict = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def setup(self):
            super().setup()
            with lock:
                state["receiver"].connections += 1
                self.connection_number = state["receiver"].connections

        def do_POST(self):
            receiver: Receiver = state["receiver"]
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            signature = self.headers.get("X-Service-Signature", "")
            receiver.hits.append(Hit(self.path, self.headers.get("Host", ""), body, signature,
                                     verify(receiver.secret, signature, body), time.monotonic(),
                                     self.headers.get("X-Service-Delivery", ""), self.connection_number))
            if receiver.delay:
                time.sleep(receiver.delay)
            if receiver.hold is not None:
                receiver.hold.wait(60)
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


@contextmanager
def _keep_alive_receiver(context: ssl.SSLContext, ca_path: str):
    """The keep-alive receiver: asyncio streams over TLS, a minimal HTTP/1.1 (Content-Length bodies)."""
    loop = asyncio.new_event_loop()
    handlers: set[asyncio.Task] = set()
    state: dict = {}

    async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        receiver: Receiver = state["receiver"]
        handlers.add(asyncio.current_task())
        receiver.connections += 1
        number = receiver.connections
        try:
            while True:
                request_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                path = request_line.split(" ")[1]
                headers = {name.strip().lower(): value.strip()
                           for name, _, value in (line.partition(":") for line in lines if line)}
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                signature = headers.get("x-service-signature", "")
                receiver.hits.append(Hit(path, headers.get("host", ""), body, signature,
                                         verify(receiver.secret, signature, body), time.monotonic(),
                                         headers.get("x-service-delivery", ""), number))
                if receiver.delay:
                    await asyncio.sleep(receiver.delay)
                while receiver.hold is not None and not receiver.hold.is_set():
                    await asyncio.sleep(0.01)
                extra = "".join(f"{name}: {value}\r\n" for name, value in receiver.headers.items())
                writer.write(f"HTTP/1.1 {receiver.status} {HTTPStatus(receiver.status).phrase}\r\n{extra}"
                             f"Content-Length: {len(receiver.body)}\r\n\r\n".encode() + receiver.body)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError, IndexError):
            pass  # the client closed the connection, or sent something that is not HTTP
        finally:
            handlers.discard(asyncio.current_task())
            writer.close()

    server = loop.run_until_complete(asyncio.start_server(serve_connection, "127.0.0.1", 0, ssl=context))
    state["receiver"] = Receiver(port=server.sockets[0].getsockname()[1], ca_path=ca_path)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def stop() -> None:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    try:
        yield state["receiver"]
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
