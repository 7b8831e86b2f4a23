"""docker/dovecot/rspamd-learn.sh on its own: the controller's password reaches rspamd as a header
but never curl's command line (which `ps` shows every local user), and the mailbox name is a value,
never shell."""
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "dovecot" / "rspamd-learn.sh"
PASSWORD = "s3cret-$(touch /tmp/pwned)-`id`"

def _command_lines() -> list[str]:
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
            except OSError:
                pass
    return lines


@pytest.fixture
def controller():
    seen = {"requests": [], "command_lines": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            seen["command_lines"] = _command_lines()  # curl is running now, waiting for this answer
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen["requests"].append((self.path, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


def _run(tmp_path, url, *args, message=b"Subject: hi\r\n\r\nbody\r\n"):
    shutil.copy(SCRIPT, tmp_path / "rspamd-learn")
    (tmp_path / "rspamd-learn.env").write_text(f"RSPAMD_CONTROLLER_URL={url}\nRSPAMD_PASSWORD={PASSWORD}\n")
    return subprocess.run(["sh", str(tmp_path / "rspamd-learn"), *args], input=message, capture_output=True,
                          timeout=30, env={**os.environ})


def test_the_password_is_a_header_and_never_on_a_command_line(tmp_path, controller):
    url, seen = controller
    result = _run(tmp_path, url, "spam", "owner@example.test")

    assert result.returncode == 0, result.stderr
    ((path, headers, body),) = seen["requests"]
    assert path == "/learnspam" and body == b"Subject: hi\r\n\r\nbody\r\n"
    assert headers["Password"] == PASSWORD and headers["Deliver-To"] == "owner@example.test"
    assert any("curl" in line for line in seen["command_lines"])
    assert not [line for line in seen["command_lines"] if "s3cret" in line]
    assert not Path("/tmp/pwned").exists()


def test_a_hostile_mailbox_name_is_a_value_not_shell(tmp_path, controller):
    url, seen = controller
    result = _run(tmp_path, url, "ham", "x$(touch /tmp/pwned2)`touch /tmp/pwned3`@example.test")

    assert result.returncode == 0, result.stderr
    ((path, headers, _),) = seen["requests"]
    assert path == "/learnham" and headers["Deliver-To"] == "x$(touch /tmp/pwned2)`touch /tmp/pwned3`@example.test"
    assert not Path("/tmp/pwned2").exists() and not Path("/tmp/pwned3").exists()
