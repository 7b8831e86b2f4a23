"""`make run` (manage.py serve) on one machine starts a private rspamd from docker/rspamd/ and says
so; where rspamd cannot be had, the product still runs with scanning off and says that plainly, at
start and on /readyz. Each case is a fresh process with its own environment, as `make run` starts one."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from testkit.django_process import NOT_INHERITED, ROOT, django_process
from testkit.smtp_sink import free_port


def _serve(tmp_path, environment: dict) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name not in NOT_INHERITED and not name.startswith("RSPAMD")}
    env.update({"DATA_DIR": str(tmp_path), "PORT": str(port), "LMTP_LISTEN": f"127.0.0.1:{free_port()}",
                "SMTP_LISTEN": f"127.0.0.1:{free_port()}", "WORKER_PROCESSES": "1",
                "DJANGO_SETTINGS_MODULE": "config.settings", **environment})
    env.pop("REDIS_URL", None)
    output = open(tmp_path / "serve.out", "wb")
    server = subprocess.Popen([sys.executable, "manage.py", "serve"], cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                              env=env, start_new_session=True)
    return server, f"http://127.0.0.1:{port}"


def _wait_for_line(tmp_path, server: subprocess.Popen, text: str, seconds: float = 90) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        output = (tmp_path / "serve.out").read_text(errors="replace")
        if text in output:
            return output
        assert server.poll() is None, f"manage.py serve exited:\n{output}"
        time.sleep(0.3)
    pytest.fail(f"{text!r} did not appear within {seconds} s:\n{(tmp_path / 'serve.out').read_text()}")


def _readyz(url: str) -> dict:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            return json.load(error)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _stop(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """One data directory for the module (a migration takes most of a minute): serve runs there in turn."""
    directory = tmp_path_factory.mktemp("serve")
    result = django_process(["manage.py", "migrate", "--noinput"], {"DATA_DIR": str(directory)}, timeout=180)
    assert result.returncode == 0, result.stderr
    return directory


def test_make_run_starts_a_private_rspamd_and_says_scanning_is_on(migrated):
    from testkit.rspamd import HS_CACHE_DIR

    server, url = _serve(migrated, {"RSPAMD_HS_CACHE_DIR": str(HS_CACHE_DIR)})
    try:
        output = _wait_for_line(migrated, server, "Scanning is on: rspamd answers")
        readyz = _readyz(url)
    finally:
        _stop(server)

    assert "Scanner: rspamd at http://127.0.0.1:" in output
    assert readyz["status"] == "ready"
    assert readyz["checks"]["rspamd"] == "ok"
    assert readyz["scanners"]["rspamd"] == "on"
    assert readyz["scanners"]["bayes"] == "on"
    rspamd_pid = (migrated / "rspamd" / "run" / "rspamd.pid")
    assert not rspamd_pid.exists() or not _alive(int(rspamd_pid.read_text().strip() or 0))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError):
        return False
    return pid > 0


def test_without_rspamd_the_scanners_serve_would_start_say_scanning_is_off_and_start_nothing(settings, tmp_path):
    """What serve prints and hands its processes when rspamd cannot be had (the banner prints these
    notes; /readyz then says "Scanning is off", portal/tests/test_ops.py)."""
    from protection.local_scanners import start_embedded

    settings.RSPAMD_BINARY = str(tmp_path / "no-such-rspamd")

    scanners = start_embedded(tmp_path)

    assert scanners.notes == [f"Scanning is OFF: rspamd is not installed ({tmp_path / 'no-such-rspamd'} not found; "
                              "scripts/install-system-deps.sh installs it). Inbound mail is not checked for spam "
                              "or viruses."]
    assert scanners.environment == {"RSPAMD_URL": "", "RSPAMD_CONTROLLER_URL": ""}
    assert scanners.rspamd is None and not (tmp_path / "rspamd").exists()


def test_with_clamav_signatures_installed_serve_starts_clamd_behind_rspamd(settings, tmp_path):
    from protection import rspamd
    from protection.local_scanners import start_embedded, wait_for_rspamd, write_eicar_database
    from testkit.rspamd import HS_CACHE_DIR

    write_eicar_database(tmp_path / "clamav")
    scanners = start_embedded(tmp_path / "data", clamav_database_dir=tmp_path / "clamav", hs_cache_dir=HS_CACHE_DIR)
    try:
        wait_for_rspamd(scanners.rspamd)
        for name, value in scanners.environment.items():
            setattr(settings, name, value)
        state = rspamd.state()
    finally:
        scanners.stop()

    assert scanners.notes == [f"Scanner: rspamd at {scanners.rspamd.url} (log: {scanners.rspamd.process.log_path})"]
    assert (state.rspamd, state.clamav, state.bayes) == (True, True, True)
    assert not scanners.rspamd.process.alive() and not scanners.rspamd.clamd.process.alive()
