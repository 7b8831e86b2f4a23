"""The warning a mailbox owner reads on a message whose sender is not who its From line claims."""
from django.conf import settings

from protection.authentication import message_authentication

OURS = settings.MAIL_HOST
FROM = ("From", "PayPal <service@paypal.com>")


def read(results: str | None, sender=FROM):
    headers = [("Authentication-Results", f"{OURS}; {results}")] if results is not None else []
    return message_authentication([*headers, sender])


def test_dmarc_failure_names_the_domain_the_message_claims():
    found = read("spf=fail smtp.mailfrom=x@evil.example; dkim=none; dmarc=fail (p=reject) header.from=paypal.com")
    assert found.warning == ("This message claims to be from paypal.com but was not sent by paypal.com's servers. "
                             "Be careful with its links, attachments and any request for money or passwords.")
    assert (found.claimed_domain, found.failed) == ("paypal.com", True)


def test_without_a_header_from_property_the_from_line_gives_the_domain():
    assert read("dmarc=fail").warning.startswith("This message claims to be from paypal.com but")


def test_spf_failure_of_a_domain_without_dmarc_warns_more_softly():
    found = read("spf=fail smtp.mailfrom=service@paypal.com; dkim=none; dmarc=none")
    assert found.warning == ("This message claims to be from paypal.com but paypal.com does not list the server "
                             "that sent it. It may not be from them.")


def test_a_valid_signature_outweighs_a_failed_spf_without_dmarc():
    assert read("spf=fail; dkim=pass header.d=paypal.com; dmarc=none").warning == ""


def test_passing_or_unchecked_mail_has_no_warning():
    assert read("spf=pass; dkim=pass; dmarc=pass; arc=none").warning == ""
    assert read("spf=temperror; dmarc=temperror").warning == ""
    assert read(None).results is None and read(None).warning == ""


def test_a_message_without_a_from_address_has_no_domain_to_name():
    assert read("dmarc=fail", sender=("From", "undisclosed")).warning == ""
