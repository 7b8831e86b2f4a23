"""One way a management command runs an SMTP service (an aiosmtpd controller) until SIGTERM or
SIGINT: the submission intake and the relay for Dovecot's own mail alike."""
import signal
import threading


def serve_until_stopped(stdout, controller, *, name: str, started: str) -> None:
    """Start `controller`, say `started`, wait for a stop signal, stop it and say so."""
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    controller.start()
    stdout.write(f"{name}: {started}")
    stdout.flush()
    try:
        while not stopping.wait(1):
            pass
    finally:
        controller.stop()
    stdout.write(f"{name}: stopped")
