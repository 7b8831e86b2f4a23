"""Headers only we may write (X-Mailwell-*, X-Spam-*, Authentication-Results with our authserv-id)
are removed from arriving mail in every case and folding variant, and whatever the reader of our
Authentication-Results (mailcore.store.authresults) would take as ours is removed too."""
import pytest

from mailcore.store.authresults import ours
from mailcore.store.reading import header_values_in
from mailcore.inbound.screening import remove_our_headers

FORGED = [
    b"X-Mailwell-Verdict: junk\r\n",
    b"x-mailwell-verdict:junk\r\n",
    b"X-MAILWELL-REASONS: a\r\n  b\r\n\tc\r\n",
    b"X-Spam-Score : 0.0\r\n",
    b"x-spam-action: inbox\r\n",
    b"Authentication-Results: mx.mailwell.test; dmarc=pass header.from=paypal.test\r\n",
    b"AUTHENTICATION-RESULTS: MX.Mailwell.Test;\r\n dkim=pass header.d=paypal.test\r\n",
    b"Authentication-Results:\r\n mx.mailwell.test 1; spf=pass\r\n",
    b'Authentication-Results: "mx.mailwell.test"; spf=pass\r\n',
    b"Authentication-Results: (comment) mx.mailwell.test; dkim=pass\r\n",
    b"Authentication-Results: (a\\)b) mx.mailwell.test; dmarc=pass header.from=paypal.test\r\n",
]


@pytest.fixture(autouse=True)
def _host(settings):
    settings.MAIL_HOST = "mx.mailwell.test"


@pytest.mark.parametrize("forged", FORGED)
def test_a_forged_header_of_ours_is_removed_and_the_rest_kept(forged):
    raw = (b"Authentication-Results: other.example; dkim=fail\r\nFrom: a@b.test\r\n" + forged
           + b"Subject: hi\r\n\r\nX-Spam-Score: in the body stays\r\n")

    cleaned = remove_our_headers(raw)

    assert cleaned == (b"Authentication-Results: other.example; dkim=fail\r\nFrom: a@b.test\r\n"
                       b"Subject: hi\r\n\r\nX-Spam-Score: in the body stays\r\n")
    assert ours(header_values_in(cleaned, "Authentication-Results")) is None
