"""A partner's webmail hostname: claimed once per partner (normalised, never one of the platform's
names), verified by background DNS checks against a real DNS server on loopback, with the reason in
words while it is not; and `tls_allowed`, the certificate ask: exact, cached, invalidated, fail closed."""
from datetime import timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone

from mailcore.errors import DomainError, InvalidFields
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.sweep import JOBS, job_run
from webmail import hostnames
from webmail.hostnames import (
    hostname_status,
    tls_allowed,
    webmail_hostname_check,
    webmail_hostname_claim,
    webmail_hostname_remove,
    webmail_hostnames_recheck_due,
)
from webmail.models import WebmailHostname
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # invalidation runs on commit, as in production
WEBMAIL = "webmail.mailwell.test"
WEBMAIL_IP = "203.0.113.10"


@pytest.fixture(autouse=True)
def _served_names_forgotten():
    """Each process keeps the served names for a second; a test starts from none (its database is new)."""
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


@pytest.fixture(autouse=True)
def _plans(plans):
    """Transactional tests start from an empty database: the plans first."""


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def other(db):
    user = UserFactory(email="dora@example.test", account__plan_code="premium")
    return hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def zone(dns_zone, settings):
    settings.WEBMAIL_HOST = WEBMAIL
    dns_zone.set(WEBMAIL, "A", WEBMAIL_IP)
    return dns_zone


def a_minute_later() -> None:
    """What CACHE_SECONDS does by itself: the generation lapses, and every process asks again."""
    cache.delete(hostnames.CACHE_KEY)
    hostnames._forget_locally()


def verified(partner, zone, name="webmail.acme.test") -> WebmailHostname:
    zone.set(hostnames.hostname_normalise(name), "CNAME", WEBMAIL)
    return webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname=name))


# claiming


@pytest.mark.parametrize("given, stored", [
    ("Webmail.Acme.TEST", "webmail.acme.test"),
    ("webmail.acme.test.", "webmail.acme.test"),
    ("  webmail.acme.test  ", "webmail.acme.test"),
    ("post.bücher.test", "post.xn--bcher-kva.test"),
])
def test_a_hostname_is_stored_normalised(partner, given, stored):
    row = webmail_hostname_claim(partner=partner, hostname=given)
    assert row.hostname == stored and hostname_status(row) == "pending"
    assert row.next_check_at is not None and row.verified_at is None


@pytest.mark.parametrize("given, message", [
    ("", "Give the hostname"),
    ("localhost", "is not a hostname"),
    ("web mail.acme.test", "is not a hostname"),
    ("-bad.acme.test", "is not a valid hostname"),
    ("10.0.0.1", "is not a valid hostname"),
    ("a" * 64 + ".acme.test", "longer than 63 characters"),
    ("webmail.mailwell.test", "one of our own names"),
    ("evil.webmail.mailwell.test", "one of our own names"),
    ("mail.mailwell.test", "one of our own names"),
    ("x.relay.mailwell.test", "one of our own names"),
    ("testserver.", "is not a hostname"),
])
def test_names_that_cannot_be_a_partners_hostname_are_refused(partner, given, message):
    with pytest.raises(InvalidFields) as refused:
        webmail_hostname_claim(partner=partner, hostname=given)
    assert message in refused.value.message_dict["hostname"][0]
    assert not WebmailHostname.objects.exists()


def test_a_name_under_an_allowed_hosts_pattern_is_refused(partner, settings):
    settings.ALLOWED_HOSTS = [".platform.example", "portal.example"]
    for name in ("mail.platform.example", "platform.example", "portal.example"):
        with pytest.raises(InvalidFields):
            webmail_hostname_claim(partner=partner, hostname=name)


def test_one_hostname_per_partner_a_new_one_replaces_it(partner):
    webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")
    same = webmail_hostname_claim(partner=partner, hostname="WEBMAIL.acme.test")
    assert WebmailHostname.objects.count() == 1 and same.hostname == "webmail.acme.test"
    webmail_hostname_claim(partner=partner, hostname="mail.acme.test")
    assert list(WebmailHostname.objects.values_list("hostname", flat=True)) == ["mail.acme.test"]


def test_a_name_another_partner_holds_is_409(partner, other):
    webmail_hostname_claim(partner=other, hostname="webmail.acme.test")
    with pytest.raises(DomainError) as refused:
        webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")
    assert refused.value.code == "conflict" and "already claimed" in refused.value.detail
    assert WebmailHostname.objects.get().partner == other


def test_a_claim_left_unverified_for_a_week_can_be_taken_by_another_partner(partner, other, zone):
    squatted = webmail_hostname_claim(partner=other, hostname="webmail.acme.test")
    with time_machine.travel(timezone.now() + timedelta(days=8)):
        webmail_hostname_check(hostname=squatted)  # nothing in DNS for a week: checks stop
        squatted.refresh_from_db()
        assert hostname_status(squatted) == "paused" and "stopped checking after a week" in squatted.check_problem
        taken = webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")
    assert taken.partner == partner and WebmailHostname.objects.count() == 1


@pytest.mark.parametrize("status", ["pending", "expired", "suspended", "rejected"])
def test_only_a_trial_or_active_account_may_claim(alice, status):
    partner = hosting_partner_enable(account=alice.account, status=status)
    with pytest.raises(DomainError) as refused:
        webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")
    assert refused.value.code == "forbidden"
    assert not WebmailHostname.objects.exists()


# checking DNS


def test_a_cname_to_the_webmail_host_verifies_it(partner, zone):
    row = verified(partner, zone)
    assert hostname_status(row) == "verified" and row.check_problem == ""
    assert row.next_check_at - row.last_checked_at == timedelta(hours=24)


def test_a_cname_chain_ending_at_the_webmail_host_verifies_it(partner, zone):
    zone.set("webmail.acme.test", "CNAME", "edge.acme-dns.test")
    zone.set("edge.acme-dns.test", "CNAME", WEBMAIL)
    row = webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname="webmail.acme.test"))
    assert row.verified_at is not None


def test_a_flattened_name_with_our_addresses_verifies_it(partner, zone):
    zone.set("acme.test", "A", WEBMAIL_IP)
    row = webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname="acme.test"))
    assert row.verified_at is not None


@pytest.mark.parametrize("records, problem", [
    ({}, "webmail.acme.test does not exist in DNS yet: create a CNAME record for it pointing to "
         "webmail.mailwell.test."),
    ({("webmail.acme.test", "CNAME"): "ghs.elsewhere.test", ("ghs.elsewhere.test", "A"): "198.51.100.7"},
     "webmail.acme.test is a CNAME to ghs.elsewhere.test, not to webmail.mailwell.test."),
    ({("webmail.acme.test", "A"): "198.51.100.7"},
     "webmail.acme.test points to 198.51.100.7, not to webmail.mailwell.test: replace that record by a CNAME to "
     "webmail.mailwell.test."),
    ({("webmail.acme.test", "TXT"): "hello"},
     "webmail.acme.test has no CNAME record: create one pointing to webmail.mailwell.test."),
])
def test_the_reason_says_what_dns_answers_instead(partner, zone, records, problem):
    for (name, rdtype), value in records.items():
        zone.set(name, rdtype, value)
    row = webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname="webmail.acme.test"))
    assert (hostname_status(row), row.check_problem) == ("pending", problem)
    assert row.next_check_at - row.last_checked_at == timedelta(minutes=1)


def test_the_background_sweep_verifies_a_name_once_dns_answers(partner, zone):
    row = webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")
    assert webmail_hostnames_recheck_due() == 1
    row.refresh_from_db()
    assert row.verified_at is None and "does not exist" in row.check_problem
    zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    assert webmail_hostnames_recheck_due() == 0  # not due yet: one minute later
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        job = next(job for job in JOBS if job.name == "recheck-webmail-hostnames")
        assert job_run(job) == 1  # through the sweep itself
    row.refresh_from_db()
    assert row.verified_at is not None and row.check_problem == ""
    assert tls_allowed("webmail.acme.test")


def test_a_verified_name_whose_dns_moves_away_stops_being_served(partner, zone):
    row = verified(partner, zone)
    assert tls_allowed("webmail.acme.test")
    zone.set("webmail.acme.test", "CNAME", "new-host.elsewhere.test")
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        assert webmail_hostnames_recheck_due() == 1
    row.refresh_from_db()
    assert row.verified_at is None and "not to webmail.mailwell.test" in row.check_problem
    assert not tls_allowed("webmail.acme.test")


def test_a_dns_timeout_does_not_unverify_a_verified_name(partner, zone, settings):
    row = verified(partner, zone)
    settings.DNS_NAMESERVERS = ["127.0.0.1:9"]  # nothing answers there
    settings.DNS_TIMEOUT_SECONDS = 1
    row = webmail_hostname_check(hostname=row)
    assert row.verified_at is not None and "we try again shortly" in row.check_problem
    assert tls_allowed("webmail.acme.test")


# tls_allowed


def test_tls_is_allowed_for_a_verified_hostname_and_the_platforms_names_only(partner, other, zone, settings):
    settings.ALLOWED_HOSTS = ["portal.mailwell.test", ".mailwell.test", "localhost", "127.0.0.1", "*"]
    verified(partner, zone)
    webmail_hostname_claim(partner=other, hostname="pending.other.test")  # claimed, not verified
    assert tls_allowed("webmail.acme.test")
    assert tls_allowed(WEBMAIL) and tls_allowed("portal.mailwell.test")
    for refused in ("pending.other.test", "acme.test", "x.webmail.acme.test", "webmail.acme.test.evil.test",
                    "other.mailwell.test", "mailwell.test", "localhost", "127.0.0.1", "*", "", "webmail.acme",
                    "webmail.acme.test:443", "webmail.acme.test/x", "a" * 300):
        assert not tls_allowed(refused), refused


@pytest.mark.parametrize("asked", ["WEBMAIL.ACME.TEST", "webmail.acme.test.", " webmail.acme.test "])
def test_tls_asks_are_normalised_before_the_exact_match(partner, zone, asked):
    verified(partner, zone)
    assert tls_allowed(asked)


def test_tls_matches_internationalised_names_in_either_form(partner, zone):
    verified(partner, zone, name="post.bücher.test")
    assert tls_allowed("post.xn--bcher-kva.test") and tls_allowed("post.bücher.test")


def test_the_cache_is_invalidated_when_a_name_is_verified_replaced_or_removed(partner, zone):
    row = webmail_hostname_claim(partner=partner, hostname="webmail.acme.test")
    assert not tls_allowed("webmail.acme.test")  # the unverified state is now cached
    zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    webmail_hostname_check(hostname=row)
    assert tls_allowed("webmail.acme.test")
    zone.set("mail.acme.test", "CNAME", WEBMAIL)
    webmail_hostname_claim(partner=partner, hostname="mail.acme.test")
    assert not tls_allowed("webmail.acme.test")  # replaced: gone at once
    webmail_hostname_check(hostname=WebmailHostname.objects.get())
    assert tls_allowed("mail.acme.test")
    webmail_hostname_remove(partner=partner)
    assert not tls_allowed("mail.acme.test")


def test_answers_come_from_the_cache_without_queries(partner, zone, django_assert_num_queries):
    verified(partner, zone)
    assert tls_allowed("webmail.acme.test")
    with django_assert_num_queries(0):
        assert tls_allowed("webmail.acme.test") and not tls_allowed("other.acme.test")


def test_a_partner_that_stops_being_trial_or_active_stops_getting_certificates(partner, zone):
    verified(partner, zone)
    assert tls_allowed("webmail.acme.test")
    HostingPartner.objects.filter(pk=partner.pk).update(status=HostingPartner.Status.SUSPENDED)
    a_minute_later()
    assert not tls_allowed("webmail.acme.test")


def test_tls_allowed_fails_closed_when_the_lookup_breaks(partner, zone, settings):
    verified(partner, zone)
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:9/0"}}  # nothing listens there
    assert not tls_allowed("webmail.acme.test")
    assert tls_allowed(WEBMAIL)  # the platform's own names need no lookup


def test_tls_is_allowed_for_the_autoconfig_names_of_a_verified_hosted_domain_only(alice):
    from mailcore.domains.services import domain_create
    from testkit.factories import make_domain

    make_domain(alice.account, "customer.test")
    domain_create(account=alice.account, name="pending.test")  # claimed, not verified
    assert tls_allowed("autoconfig.customer.test") and tls_allowed("AUTODISCOVER.customer.test.")
    for refused in ("customer.test", "autoconfig.pending.test", "autodiscover.unknown.test",
                    "x.autoconfig.customer.test", "autoconfig.autoconfig.customer.test", "mail.customer.test",
                    "autoconfig.", "autoconfig"):
        assert not tls_allowed(refused), refused
