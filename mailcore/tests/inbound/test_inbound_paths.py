"""The listener reads MAIL and RCPT paths as aiosmtpd does, through a fast path for the plain
<local@domain> form Postfix writes: the same address and parameters for every form, plain or not."""
import pytest
from aiosmtpd.smtp import SMTP

from mailcore.inbound.server import InboundProtocol

PATHS = [
    "<a@b.c>", "<a@b.c> SIZE=100 BODY=8BITMIME", "<a@b.c>   ", "<a@b.c> (comment) SIZE=1",
    "<first.last+tag@ex-ample.test>", " <x@y>", "<a..b@c>", "<.a@c>", "<a.@c>", '<"q u"@c.d>', "a@b.c",
    "<>", "<a@b.c", "<a@[1.2.3.4]>", "<é@x.y>", "<a@b.c>extra", "<A!#$%&'*+/=?^_`{|}~-@X.Y>", "<a@-b.c>",
    "<a@b..c>", "<a(b)@c>", "<a@b.c.>", "", "<@relay.test:a@b.c>", "<" + "l" * 70 + "@b.c>",
]


@pytest.mark.parametrize("limit", [0, 64])
@pytest.mark.parametrize("path", PATHS)
def test_a_path_reads_as_aiosmtpd_reads_it(path, limit):
    protocol = InboundProtocol.__new__(InboundProtocol)  # only the reading of a path, no session
    protocol.local_part_limit = limit

    assert protocol._getaddr(path) == SMTP._getaddr(protocol, path)
