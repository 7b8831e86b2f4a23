"""Reading our Authentication-Results back (RFC 8601): only the header with our authserv-id counts,
methods not reported read "none", comments and properties are kept, malformed headers never raise."""
import pytest
from django.conf import settings

from mailcore.store.authresults import authentication_summary, ours, parse

OURS = settings.MAIL_HOST


def test_a_full_header_reads_each_method_its_properties_and_comment():
    authserv_id, results = parse(f"{OURS}; spf=pass smtp.mailfrom=a@x.com; dkim=pass header.d=x.com; "
                                 "dmarc=fail (p=reject) header.from=x.com; arc=none")
    assert authserv_id == OURS
    assert results.summary() == {"spf": "pass", "dkim": "pass", "dmarc": "fail", "arc": "none"}
    assert results.methods["dmarc"].comment == "p=reject"
    assert results.methods["dmarc"].properties == {"header.from": "x.com"}
    assert results.methods["spf"].properties == {"smtp.mailfrom": "a@x.com"}


def test_folded_lines_versions_and_case_are_read():
    authserv_id, results = parse(f"  {OURS.upper()} 1;\r\n\tSPF=SoftFail smtp.mailfrom=a@x.com;\r\n dkim/1=pass")
    assert authserv_id == OURS
    assert results.summary() == {"spf": "softfail", "dkim": "pass", "dmarc": "none", "arc": "none"}


def test_only_the_first_result_of_a_method_counts():
    _, results = parse(f"{OURS}; dkim=fail header.d=a.com; dkim=pass header.d=b.com")
    assert results.result("dkim") == "fail"


@pytest.mark.parametrize("value", ["", ";;;", f"{OURS}", f"{OURS}; none", f"{OURS}; spf=maybe", "(only a comment)",
                                   f"{OURS}; dmarc=fail (unclosed"])
def test_malformed_headers_never_raise(value):
    parse(value)


def test_a_header_with_another_authserv_id_is_not_ours():
    assert ours(["mx.google.com; spf=pass; dkim=pass; dmarc=pass"]) is None
    assert authentication_summary(["mx.google.com; dmarc=pass", f"{OURS}; dmarc=fail"]) == {
        "spf": "none", "dkim": "none", "dmarc": "fail", "arc": "none"}


def test_a_message_without_any_reads_none():
    assert authentication_summary([]) is None

