"""The owner's settings pages in the webmail: password (other sessions end, wrong tries throttled),
name and signature, forwarding with its confirmation mail, filters (add, edit, reorder, delete) and
the vacation reply, all as plain forms; another mailbox's filter or rule is 404 and stays as it was."""
import html
import re

import pytest
from django.core import mail
from django.test import Client

from mailcore.mailboxes.models import ForwardingRule
from mailcore.mailboxes.passwords import mailbox_password_verify
from mailcore.store.factory import store_for
from mailcore.rules.filters import FilterInput, mail_filter_create
from mailcore.rules.models import MailFilter, SieveScript, VacationReply
from webmail.models import WebmailSession
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db
PASSWORD = "mailbox-password-1"
PAGES = ["/webmail/settings/", "/webmail/settings/password/", "/webmail/settings/identity/",
         "/webmail/settings/forwarding/", "/webmail/settings/filters/", "/webmail/settings/vacation/"]


@pytest.fixture
def owner(alice):
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    store_for(mailbox).ensure_folders()
    store_for(mailbox).create_folder("Receipts")
    return mailbox


def sign_in(client, address="ann@example.test", password=PASSWORD):
    response = client.post("/webmail/", {"address": address, "password": password})
    assert response.status_code == 302
    return client


@pytest.fixture
def signed_in(client, owner):
    return sign_in(client)


@pytest.fixture
def stranger_filter(charlie):
    """A filter of a mailbox in charlie's account."""
    mailbox = make_mailbox(charlie.account, "carl@charlie.test", password=PASSWORD)
    store_for(mailbox).ensure_folders()
    return mail_filter_create(mailbox=mailbox, data=FilterInput(field="subject", match="contains", value="theirs",
                                                                action="move", folder="Archive"))


def page(response) -> str:
    return response.content.decode()


def text(response) -> str:
    """The page's words, tags removed and spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page(response))).split())


def filter_post(**fields) -> dict:
    return {"field": "subject", "match": "contains", "value": "receipt", "action": "move", "folder": "Receipts",
            "stop": "on", "enabled": "on", **fields}


# the frame and the realm


@pytest.mark.parametrize("url", PAGES)
def test_settings_pages_send_everyone_else_to_the_sign_in_page(client, owner, url):
    response = client.get(url)

    assert (response.status_code, response["Location"]) == (302, f"/webmail/?next={url}")
    if url != "/webmail/settings/":  # the overview only shows
        assert client.post(url, {}).status_code == 302


@pytest.mark.parametrize("url", PAGES)
def test_each_settings_page_shows_the_settings_menu_and_marks_itself(signed_in, url):
    response = signed_in.get(url)

    assert response.status_code == 200
    html = page(response)
    assert '<nav class="settings__nav" aria-label="Settings">' in html
    assert f'href="{url}" aria-current="page"' in html
    assert 'href="/webmail/settings/" aria-current="true">Settings</a>' in html  # the top bar's link


def test_the_webmail_frame_links_to_the_settings(signed_in):
    assert 'href="/webmail/settings/"' in page(signed_in.get("/webmail/inbox/"))


def test_a_post_without_the_csrf_token_is_refused(signed_in):
    client = Client(enforce_csrf_checks=True)
    client.cookies = signed_in.cookies

    response = client.post("/webmail/settings/filters/", filter_post())

    assert response.status_code == 403
    assert MailFilter.objects.count() == 0


# password


def test_changing_the_password_ends_the_other_sessions_but_not_this_one(signed_in, owner):
    other_browser = sign_in(Client())

    response = signed_in.post("/webmail/settings/password/", {
        "current_password": PASSWORD, "new_password": "a new password 2", "new_password_again": "a new password 2"},
        follow=True)

    assert "Password changed. Mail apps on your devices need the new password now. 1 other webmail session " \
           "signed out." in text(response)
    owner.refresh_from_db()
    assert mailbox_password_verify("a new password 2", owner.password_hash)
    assert signed_in.get("/webmail/settings/").status_code == 200
    assert other_browser.get("/webmail/settings/").status_code == 302
    assert WebmailSession.objects.filter(ended_at__isnull=True).count() == 1


@pytest.mark.parametrize("fields, error", [
    ({"current_password": "wrong password", "new_password": "a new password 2",
      "new_password_again": "a new password 2"}, "That is not this mailbox's current password."),
    ({"current_password": PASSWORD, "new_password": "short", "new_password_again": "short"},
     "At least 8 characters."),
    ({"current_password": PASSWORD, "new_password": "a new password 2", "new_password_again": "another one 3"},
     "The two new passwords are not the same."),
    ({"current_password": PASSWORD, "new_password": PASSWORD, "new_password_again": PASSWORD},
     "Choose a password different from the current one."),
])
def test_a_refused_password_change_says_why_and_changes_nothing(signed_in, owner, fields, error):
    other_browser = sign_in(Client())
    before = owner.password_hash

    response = signed_in.post("/webmail/settings/password/", fields)

    assert response.status_code == 400
    assert error in text(response)
    owner.refresh_from_db()
    assert owner.password_hash == before
    assert other_browser.get("/webmail/settings/").status_code == 200


def test_wrong_current_passwords_are_throttled(signed_in, owner, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    wrong = {"current_password": "wrong password", "new_password": "a new password 2",
             "new_password_again": "a new password 2"}
    for _ in range(3):
        assert signed_in.post("/webmail/settings/password/", wrong).status_code == 400

    response = signed_in.post("/webmail/settings/password/", {**wrong, "current_password": PASSWORD})

    assert response.status_code == 429
    assert "Too many failed logins. Try again in" in text(response)
    owner.refresh_from_db()
    assert mailbox_password_verify(PASSWORD, owner.password_hash)


# identity


def test_the_name_and_a_sanitized_signature_are_saved(signed_in, owner):
    response = signed_in.post("/webmail/settings/identity/", {
        "display_name": "Ann Example", "signature_html": '<p>Ann<script>alert(1)</script><br>Example Ltd</p>'},
        follow=True)

    owner.refresh_from_db()
    assert (owner.display_name, owner.signature_html) == ("Ann Example", "<p>Ann<br>Example Ltd</p>")
    assert "Saved. New mail from this mailbox uses this name and signature." in text(response)
    assert "&lt;p&gt;Ann&lt;br&gt;Example Ltd&lt;/p&gt;" in page(response)  # shown as source, never as HTML
    assert 'value="Ann Example"' in page(response)


def test_a_name_with_a_line_break_is_refused(signed_in, owner):
    response = signed_in.post("/webmail/settings/identity/", {"display_name": "Ann\r\nBcc: x@evil.test",
                                                               "signature_html": ""})

    assert response.status_code == 400
    assert "Use one line without control characters." in text(response)
    owner.refresh_from_db()
    assert owner.display_name == ""


# forwarding


def test_adding_a_forwarding_address_mails_it_a_confirmation_link(signed_in, owner):
    response = signed_in.post("/webmail/settings/forwarding/", {"forward_to": "ann@elsewhere.test",
                                                                 "keep_copy": "on"}, follow=True)

    assert "We emailed ann@elsewhere.test a link to confirm." in text(response)
    assert "Waiting for confirmation" in text(response)
    [message] = mail.outbox
    assert (message.to, message.subject) == (["ann@elsewhere.test"], "Confirm forwarding from ann@example.test")
    assert "/v1/hosting/forwarding/confirm/" in message.body
    assert ForwardingRule.objects.get().forward_to == "ann@elsewhere.test"


def test_past_the_hourly_number_of_confirmation_mails_the_page_says_when_to_try_again(signed_in, owner, settings):
    settings.FORWARDING_CONFIRMATIONS_PER_HOUR = 1
    signed_in.post("/webmail/settings/forwarding/", {"forward_to": "ann@elsewhere.test"})

    response = signed_in.post("/webmail/settings/forwarding/", {"forward_to": "bob@elsewhere.test"})

    assert response.status_code == 429
    assert "At most 1 forwarding confirmations an hour. Try again in" in text(response)
    assert [message.to for message in mail.outbox] == [["ann@elsewhere.test"]]


@pytest.mark.parametrize("target, error", [
    ("not an address", "Enter a valid email address."),
    ("ann@example.test", "That address delivers to this mailbox itself."),
])
def test_a_bad_forwarding_address_is_refused(signed_in, owner, target, error):
    response = signed_in.post("/webmail/settings/forwarding/", {"forward_to": target})

    assert response.status_code == 400
    assert error in text(response)
    assert (ForwardingRule.objects.count(), len(mail.outbox)) == (0, 0)


def test_a_forwarding_rule_turns_off_and_is_removed(signed_in, owner):
    signed_in.post("/webmail/settings/forwarding/", {"forward_to": "ann@elsewhere.test"})
    rule = ForwardingRule.objects.get()

    signed_in.post(f"/webmail/settings/forwarding/{rule.pk}/enabled/", {"enabled": ""})
    rule.refresh_from_db()
    assert rule.enabled is False
    confirm = signed_in.get(f"/webmail/settings/forwarding/{rule.pk}/delete/")
    assert "Stop forwarding to ann@elsewhere.test?" in text(confirm)
    signed_in.post(f"/webmail/settings/forwarding/{rule.pk}/delete/")

    assert ForwardingRule.objects.count() == 0


def test_another_mailboxs_forwarding_rule_is_not_found(signed_in, charlie):
    theirs = make_mailbox(charlie.account, "carl@charlie.test")
    rule = ForwardingRule.objects.create(mailbox=theirs, forward_to="carl@elsewhere.test")

    assert signed_in.post(f"/webmail/settings/forwarding/{rule.pk}/enabled/", {"enabled": ""}).status_code == 404
    assert signed_in.get(f"/webmail/settings/forwarding/{rule.pk}/delete/").status_code == 404
    assert signed_in.post(f"/webmail/settings/forwarding/{rule.pk}/delete/").status_code == 404
    rule.refresh_from_db()
    assert rule.enabled is True


# filters


def test_the_filter_form_offers_the_mailboxs_folders_and_labels(signed_in, owner, alice):
    from mailcore.inbox.labels import label_create

    label_create(account=alice.account, name="Team", color="#336699", mailbox=owner)

    html = page(signed_in.get("/webmail/settings/filters/"))

    assert "No filters yet" in html
    folders = re.search(r'<select name="folder".*?</select>', html, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)"', folders) == ["", "Sent", "Drafts", "Archive", "Junk", "Trash",
                                                                "Receipts"]
    labels = re.search(r'<select name="label".*?</select>', html, re.S).group(0)
    assert ">Team</option>" in labels


def test_a_new_filter_is_listed_and_published(signed_in, owner):
    response = signed_in.post("/webmail/settings/filters/", filter_post(), follow=True)

    assert "Filter added. It applies to mail arriving from now on." in text(response)
    assert "Filter 1: If Subject contains “ receipt ” → Move to folder Receipts , then stop" in text(response)
    assert 'fileinto "Receipts";' in SieveScript.objects.get(mailbox=owner).script


def test_a_bad_filter_names_each_problem_and_saves_nothing(signed_in, owner):
    response = signed_in.post("/webmail/settings/filters/", filter_post(
        field="from", match="is", value="Bob", action="move", folder=""))

    assert response.status_code == 400
    words = text(response)
    assert '"is" compares whole addresses: enter one (like ann@example.com), or choose contains.' in words
    assert "Choose the folder to move matching mail to." in words
    assert 'aria-invalid="true"' in page(response)
    assert (MailFilter.objects.count(), SieveScript.objects.count()) == (0, 0)


def test_a_filter_is_edited(signed_in, owner):
    mail_filter = mail_filter_create(mailbox=owner, data=FilterInput(
        field="subject", match="contains", value="receipt", action="move", folder="Receipts"))
    form = page(signed_in.get(f"/webmail/settings/filters/{mail_filter.pk}/"))
    assert 'value="receipt"' in form and '<option value="Receipts" selected>' in form

    signed_in.post(f"/webmail/settings/filters/{mail_filter.pk}/", filter_post(
        value="newsletter", action="mark_read", folder="", stop=""))

    mail_filter.refresh_from_db()
    assert (mail_filter.value, mail_filter.action, mail_filter.stop) == ("newsletter", "mark_read", False)
    assert 'addflag "\\\\Seen";' in SieveScript.objects.get(mailbox=owner).script


def test_filters_move_up_and_down_without_and_with_htmx(signed_in, owner):
    a, b = (mail_filter_create(mailbox=owner, data=FilterInput(field="subject", match="contains", value=value,
                                                               action="mark_read")) for value in ("alpha", "beta"))

    response = signed_in.post(f"/webmail/settings/filters/{b.pk}/move/", {"direction": "up"})
    assert response.status_code == 302
    assert list(MailFilter.objects.filter(mailbox=owner)) == [b, a]

    swapped = signed_in.post(f"/webmail/settings/filters/{b.pk}/move/", {"direction": "down"}, HTTP_HX_REQUEST="true")
    assert list(MailFilter.objects.filter(mailbox=owner)) == [a, b]
    html = page(swapped)
    assert html.lstrip().startswith('<section id="filter-list"')
    assert '<p class="webmail-settings__status" role="status" aria-live="polite">Filter moved down.</p>' in html
    assert html.index("alpha") < html.index("beta")
    assert signed_in.post(f"/webmail/settings/filters/{b.pk}/move/", {"direction": "sideways"}).status_code == 400


def test_a_filter_is_deleted_after_a_confirmation(signed_in, owner):
    mail_filter = mail_filter_create(mailbox=owner, data=FilterInput(
        field="subject", match="contains", value="receipt", action="move", folder="Receipts"))

    confirm = signed_in.get(f"/webmail/settings/filters/{mail_filter.pk}/delete/")
    assert "Delete this filter?" in text(confirm)
    signed_in.post(f"/webmail/settings/filters/{mail_filter.pk}/delete/")

    assert (MailFilter.objects.count(), SieveScript.objects.count()) == (0, 0)


def test_a_filter_whose_folder_is_gone_says_so(signed_in, owner):
    mail_filter_create(mailbox=owner, data=FilterInput(field="subject", match="contains", value="receipt",
                                                       action="move", folder="Receipts"))
    store_for(owner).delete_folder("Receipts")

    assert "The folder Receipts no longer exists: this mail stays in the Inbox." in text(
        signed_in.get("/webmail/settings/filters/"))


@pytest.mark.parametrize("method, suffix", [("get", "/"), ("post", "/"), ("get", "/delete/"), ("post", "/delete/"),
                                            ("post", "/move/")])
def test_another_mailboxs_filter_is_not_found(signed_in, stranger_filter, method, suffix):
    response = getattr(signed_in, method)(f"/webmail/settings/filters/{stranger_filter.pk}{suffix}",
                                          filter_post(direction="up"))

    assert response.status_code == 404
    stranger_filter.refresh_from_db()
    assert stranger_filter.value == "theirs"


# vacation


def test_a_vacation_reply_is_turned_on_with_dates_and_off_again(signed_in, owner):
    response = signed_in.post("/webmail/settings/vacation/", {
        "enabled": "on", "subject": "Away", "body": "Back on the 5th.", "starts_on": "2026-12-20",
        "ends_on": "2027-01-04", "days": "3"}, follow=True)

    assert "Vacation reply on: senders get it as their mail arrives." in text(response)
    assert 'value="2027-01-04"' in page(response)
    script = SieveScript.objects.get(mailbox=owner).script
    assert 'vacation :days 3 :subject "Away" :addresses ["ann@example.test"] "Back on the 5th.";' in script

    response = signed_in.post("/webmail/settings/vacation/", {"subject": "Away", "body": "Back on the 5th.",
                                                               "days": "3"}, follow=True)
    assert "Vacation reply off." in text(response)
    assert VacationReply.objects.get(mailbox=owner).enabled is False
    assert SieveScript.objects.filter(mailbox=owner).count() == 0


def test_bad_vacation_settings_are_explained_and_change_nothing(signed_in, owner):
    response = signed_in.post("/webmail/settings/vacation/", {
        "enabled": "on", "subject": "Away", "body": "", "starts_on": "2027-01-04", "ends_on": "2026-12-20",
        "days": "7"})

    assert response.status_code == 400
    words = text(response)
    assert "Write the reply senders get." in words and "The last day comes before the first." in words
    response = signed_in.post("/webmail/settings/vacation/", {"enabled": "on", "body": "Away", "days": "0"})
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 1." in text(response)
    assert (VacationReply.objects.count(), SieveScript.objects.count()) == (0, 0)
