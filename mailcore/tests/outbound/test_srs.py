"""SRS addresses of forwards (mailcore.outbound.srs): what a forward's envelope sender becomes, and
which addresses a bounce may come back to."""
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from mailcore.outbound.srs import SrsInvalid, srs_forward, srs_reverse

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
SRS0 = re.compile(r"^SRS0=[A-Za-z0-9+/]{4}=[A-Z2-7]{2}=sender\.test=bea@example\.test$")


@pytest.fixture(autouse=True)
def secrets(settings):
    settings.SRS_SECRET = "the current srs secret"
    settings.SRS_OLD_SECRETS = []
    settings.SECRET_KEY_FALLBACKS = []


def test_a_sender_is_rewritten_onto_the_forwarding_domain_and_reverses_to_itself():
    rewritten = srs_forward("bea@sender.test", "example.test")
    assert SRS0.match(rewritten), rewritten
    assert srs_reverse(rewritten) == "bea@sender.test"


def test_the_hash_is_checked_without_regard_to_case_and_the_sender_keeps_its_own():
    rewritten = srs_forward("Bea.Smith@Sender.test", "Example.TEST")
    assert rewritten.endswith("=Sender.test=Bea.Smith@example.test")
    assert srs_reverse(rewritten.lower()) == "bea.smith@sender.test"
    assert srs_reverse(rewritten.upper()) == "BEA.SMITH@SENDER.TEST"


def test_the_null_sender_and_a_sender_without_a_domain_stay_null():
    assert srs_forward("", "example.test") == ""
    assert srs_forward("mailer-daemon", "example.test") == ""
    assert srs_forward("@sender.test", "example.test") == ""


def test_another_forwarders_srs0_address_becomes_srs1_and_bounces_back_to_that_forwarder():
    theirs = "SRS0=AbCd=XY=sender.test=bea@first.test"
    ours = srs_forward(theirs, "example.test")
    assert ours.startswith("SRS1=") and ours.endswith("=first.test==AbCd=XY=sender.test=bea@example.test")
    assert srs_reverse(ours) == theirs


def test_a_tampered_hash_a_changed_sender_and_a_made_up_address_are_refused():
    rewritten = srs_forward("bea@sender.test", "example.test")
    _, hash_, rest = rewritten.split("=", 2)
    forged_hash = "SRS0=" + ("AAAA" if hash_.upper() != "AAAA" else "BBBB") + "=" + rest
    changed_sender = rewritten.replace("=bea@", "=ceo@")
    for forged in (forged_hash, changed_sender, "SRS0=abcd=AA=sender.test=bea@example.test",
                   "SRS1=abcd=first.test==x@example.test", "bea@example.test", "SRS0=nonsense@example.test"):
        with pytest.raises(SrsInvalid):
            srs_reverse(forged)


def test_an_address_is_accepted_back_for_its_validity_days_and_not_after():
    with time_machine.travel(NOW, tick=False):
        rewritten = srs_forward("bea@sender.test", "example.test")
    with time_machine.travel(NOW + timedelta(days=20), tick=False):
        assert srs_reverse(rewritten) == "bea@sender.test"
    with time_machine.travel(NOW + timedelta(days=22), tick=False), pytest.raises(SrsInvalid):
        srs_reverse(rewritten)


def test_after_a_rotation_the_old_secret_still_reverses_until_it_is_dropped(settings):
    before = srs_forward("bea@sender.test", "example.test")
    settings.SRS_SECRET, settings.SRS_OLD_SECRETS = "the next srs secret", ["the current srs secret"]
    assert srs_reverse(before) == "bea@sender.test"
    after = srs_forward("bea@sender.test", "example.test")
    assert after != before and srs_reverse(after) == "bea@sender.test"
    settings.SRS_OLD_SECRETS = []
    with pytest.raises(SrsInvalid):
        srs_reverse(before)


def test_without_srs_secret_the_secret_comes_from_secret_key_and_follows_its_fallbacks(settings):
    settings.SRS_SECRET = ""
    settings.SECRET_KEY = "k" * 60
    rewritten = srs_forward("bea@sender.test", "example.test")
    settings.SECRET_KEY = "n" * 60
    with pytest.raises(SrsInvalid):
        srs_reverse(rewritten)
    settings.SECRET_KEY_FALLBACKS = ["k" * 60]
    assert srs_reverse(rewritten) == "bea@sender.test"
    settings.SECRET_KEY_FALLBACKS = []
    settings.SRS_SECRET = "now set explicitly"  # the derived default it replaces stays valid
    settings.SECRET_KEY = "k" * 60
    assert srs_reverse(rewritten) == "bea@sender.test"
