"""A real HTTPS server on loopback (certificate from trustme) answering GET requests with whatever a
test puts at each path: an image, an error, a redirect. It records each request it gets."""
import ssl
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trustme


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict = field(default_factory=dict)


@dataclass
class FileServer:
    port: int
    ca_path: str
    answers: dict[str, Answer] = field(default_factory=dict)
    hits: list[tuple[str, str]] = field(default_factory=list)  # (path, Host header)

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def put(self, path: str, body: bytes = b"", status: int = 200, **headers) -> str:
        self.answers[path] = Answer(status, body, {name.replace("_", "-"): value for name, value in headers.items()})
        return self.url(path)


@contextmanager
def https_files(tmp_path):
    authority = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    ca_path = tmp_path / "files-ca.pem"
    authority.cert_pem.write_to_path(str(ca_path))
    state: dict = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            server: FileServer = state["server"]
            server.hits.append((self.path, self.headers.get("Host", "")))
            answer = server.answers.get(self.path, Answer(404, b"not found"))
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                if value is not None:  # None: leave the header out (Content-Length=None: read until close)
                    self.send_header(name, value)
            if "Content-Length" not in answer.headers:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            try:
                self.wfile.write(answer.body)
            except (ConnectionResetError, BrokenPipeError):
                pass  # the client stopped reading: what a capped read does

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state["server"] = FileServer(port=httpd.server_address[1], ca_path=str(ca_path))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["server"]
    finally:
        httpd.shutdown()
        httpd.server_close()
