"""`manage.py mail_listener`: serves LMTP and SMTP on the address given, in one process or several,
and stops cleanly on SIGTERM."""
import signal
import smtplib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit.smtp_sink import free_port

ROOT = Path(__file__).resolve().parents[3]


def wait_for_greeting(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=2):
                return
        except OSError:
            assert process.poll() is None, process.stdout.read()
            time.sleep(0.1)
    raise AssertionError("the listener never answered")


@pytest.mark.parametrize(("processes", "described"), [
    ("1", "(store: embedded)"), ("2", "(store: embedded, 2 processes)"),
])
def test_the_command_speaks_lmtp_and_smtp_on_one_port_and_stops_on_sigterm(tmp_path, processes, described):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mail_listener", "--listen", f"127.0.0.1:{port}", "--processes", processes],
        cwd=ROOT, env={"DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        wait_for_greeting(port, process)
        with smtplib.LMTP("127.0.0.1", port) as lmtp:
            assert lmtp.ehlo()[0] == 250  # smtplib.LMTP sends LHLO
            assert lmtp.docmd("EHLO", "x")[0] == 250
        with smtplib.SMTP("127.0.0.1", port) as smtp:
            code, capabilities = smtp.ehlo()
            assert (code, b"SIZE 36700160" in capabilities) == (250, True)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    assert f"mail_listener: LMTP and SMTP on 127.0.0.1:{port} {described}" in output
    assert output.rstrip().endswith("mail_listener: stopped")
