"""Browser journeys: Playwright drives Debian's Chromium (/usr/bin/chromium) against a live server.

The live server runs in a thread of the test process on the test database, so journeys are
transactional tests and take the `plans` fixture (plans are re-created after each flush).
Playwright's sync API runs an event loop in the main thread; Django's ORM calls made by the test
itself are synchronous, hence DJANGO_ALLOW_ASYNC_UNSAFE for this folder only.
"""
import os
from pathlib import Path

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make test`, which installs Debian's chromium package")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run",
                 # Sandboxed frames (the webmail's message bodies) in the page's own process, so request
                 # routing sees every request they make from the first one on.
                 "--disable-features=IsolateSandboxedIframes"],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 860}}


@pytest.fixture
def screenshot(page):
    """Save a full-page screenshot under e2e/screenshots/<name>.png (look at them)."""
    SCREENSHOTS.mkdir(exist_ok=True)

    def take(name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def log_in(page, live_server):
    """Log a user in through the real login form."""

    def login(email: str, password: str) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign In").click()
        page.wait_for_url(f"{live_server.url}/")

    return login
