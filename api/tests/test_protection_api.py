"""/protection: an owner allows and blocks senders for one of the account's hosted mailboxes and
files more mail in Junk than the domain does; another account's mailbox does not exist for them."""
import pytest

from protection.models import DomainPolicy, MailboxPolicy, SenderRule
from testkit.clients import key_client
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

ADDRESS = "ann@example.test"


@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, ADDRESS)


def test_the_owner_allows_and_blocks_senders(alice_api, mailbox):
    allowed = alice_api.post(f"/protection/sender-rules?email={ADDRESS}", {"kind": "allow", "sender": "Bob@Friend.Example"},
                             format="json")
    blocked = alice_api.post(f"/protection/sender-rules?email={ADDRESS}", {"kind": "block", "sender": "@spam.example"},
                             format="json")
    assert (allowed.status_code, blocked.status_code) == (201, 201)
    assert (allowed.json()["kind"], allowed.json()["sender"]) == ("allow", "bob@friend.example")
    listed = alice_api.get("/protection/sender-rules", {"email": ADDRESS}).json()
    assert [(rule["kind"], rule["sender"]) for rule in listed] == [("allow", "bob@friend.example"),
                                                                   ("block", "spam.example")]
    deleted = alice_api.delete(f"/protection/sender-rules/{blocked.json()['id']}?email={ADDRESS}")
    assert deleted.status_code == 204
    assert list(SenderRule.objects.filter(mailbox=mailbox).values_list("sender", flat=True)) == ["bob@friend.example"]


def test_an_invalid_sender_is_a_field_error(alice_api, mailbox):
    response = alice_api.post(f"/protection/sender-rules?email={ADDRESS}", {"kind": "allow", "sender": "bob@"},
                              format="json")
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["sender"]
    assert not SenderRule.objects.exists()


def test_a_stranger_cannot_see_or_change_the_owners_lists(charlie_api, mailbox):
    rule = SenderRule.objects.create(mailbox=mailbox, kind="block", sender="x.example")
    assert charlie_api.get("/protection/sender-rules", {"email": ADDRESS}).status_code == 404
    assert charlie_api.post(f"/protection/sender-rules?email={ADDRESS}", {"kind": "allow", "sender": "a.example"},
                            format="json").status_code == 404
    assert charlie_api.delete(f"/protection/sender-rules/{rule.pk}?email={ADDRESS}").status_code == 404
    assert charlie_api.patch(f"/protection/filtering?email={ADDRESS}", {"junk_at": 1}, format="json").status_code == 404
    assert list(SenderRule.objects.values_list("sender", flat=True)) == ["x.example"]
    assert not MailboxPolicy.objects.exists()


def test_a_rule_of_another_mailbox_is_not_found(alice_api, mailbox, alice):
    other = make_mailbox(alice.account, "bea@example.test")
    rule = SenderRule.objects.create(mailbox=other, kind="block", sender="x.example")
    assert alice_api.delete(f"/protection/sender-rules/{rule.pk}?email={ADDRESS}").status_code == 404
    assert SenderRule.objects.filter(pk=rule.pk).exists()


def test_the_owner_files_more_in_junk_but_never_less_than_the_domain(alice_api, mailbox):
    assert alice_api.get("/protection/filtering", {"email": ADDRESS}).json() == {"junk_at": None,
                                                                                 "domain_junk_at": 6.0}
    stricter = alice_api.patch(f"/protection/filtering?email={ADDRESS}", {"junk_at": 3.5}, format="json")
    assert stricter.status_code == 200
    assert stricter.json() == {"junk_at": 3.5, "domain_junk_at": 6.0}
    laxer = alice_api.patch(f"/protection/filtering?email={ADDRESS}", {"junk_at": 8}, format="json")
    assert laxer.status_code == 422
    assert laxer.json()["errors"] == {"junk_at": ["can only be stricter than your provider's setting: at most 6"]}
    assert MailboxPolicy.objects.get(mailbox=mailbox).junk_at == 3.5
    back = alice_api.patch(f"/protection/filtering?email={ADDRESS}", {"junk_at": None}, format="json")
    assert back.json() == {"junk_at": None, "domain_junk_at": 6.0}


def test_the_domains_threshold_bounds_the_owners(alice_api, mailbox):
    DomainPolicy.objects.create(domain=mailbox.domain, junk_at=4)
    assert alice_api.patch(f"/protection/filtering?email={ADDRESS}", {"junk_at": 5}, format="json").status_code == 422
    assert alice_api.get("/protection/filtering", {"email": ADDRESS}).json()["domain_junk_at"] == 4.0


def test_a_read_only_key_cannot_change_the_lists(alice, mailbox):
    reader = key_client(alice, ["mailboxes:read"])
    assert reader.get("/protection/sender-rules", {"email": ADDRESS}).status_code == 200
    assert reader.post(f"/protection/sender-rules?email={ADDRESS}", {"kind": "allow", "sender": "a.example"},
                       format="json").status_code == 403
    assert not SenderRule.objects.exists()
