"""The filter and vacation services: every bad field named at once and nothing changed, order kept,
and the script published where Dovecot reads it (the dovecot_sieve_scripts view)."""
from datetime import date

import pytest
from django.db import connection

from mailcore.errors import InvalidFields
from mailcore.inbox.labels import label_create
from mailcore.mailboxes.aliases import alias_create
from mailcore.store.factory import store_for
from mailcore.rules.filters import (
    FilterInput,
    VacationInput,
    mail_filter_create,
    mail_filter_delete,
    mail_filter_get,
    mail_filter_list,
    mail_filter_move,
    mail_filter_update,
    mail_filters_reorder,
    vacation_get,
    vacation_set,
)
from mailcore.rules.models import MailFilter, SieveScript, VacationReply
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(ann):
    store_for(ann).ensure_folders()
    store_for(ann).create_folder("Receipts")
    return ann


def _input(**fields) -> FilterInput:
    return FilterInput(**{"field": "subject", "match": "contains", "value": "receipt", "action": "move",
                          "folder": "Receipts", **fields})


def _errors(excinfo) -> dict:
    return {name: [str(message) for message in messages] for name, messages in excinfo.value.message_dict.items()}


def _view_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT username, name, data_id, script FROM dovecot_sieve_scripts ORDER BY username")
        return cursor.fetchall()


def test_a_new_filter_runs_last_and_the_script_is_published_for_dovecot(owner):
    first = mail_filter_create(mailbox=owner, data=_input())
    second = mail_filter_create(mailbox=owner, data=_input(value="Digest", match="is", action="mark_read", folder=""))

    assert [(f.pk, f.position) for f in mail_filter_list(mailbox=owner)] == [(first.pk, 0), (second.pk, 1)]
    [(username, name, data_id, script)] = _view_rows()
    assert (username, name, data_id) == ("ann@example.test", "mailwell", SieveScript.objects.get().data_id)
    assert script.index('fileinto "Receipts"') < script.index('header :is ["subject"] "Digest"')


def test_every_bad_field_is_named_at_once_and_nothing_is_saved(owner, alice):
    other = make_mailbox(alice.account, "other@example.test")
    foreign = label_create(account=alice.account, name="Theirs", color="#112233", mailbox=other)
    with pytest.raises(InvalidFields) as excinfo:
        mail_filter_create(mailbox=owner, data=FilterInput(field="body", match="like", value="a\nb", action="move",
                                                           folder="Nowhere"))
    assert _errors(excinfo) == {
        "field": ["choose From, To or Cc, or Subject"],
        "match": ["choose contains or is"],
        "value": ["one line, without control characters"],
        "folder": ["there is no folder named Nowhere"],
    }
    with pytest.raises(InvalidFields) as excinfo:
        mail_filter_create(mailbox=owner, data=_input(field="from", match="is", value="Bob", action="label",
                                                      label_id=foreign.pk))
    assert _errors(excinfo) == {
        "value": ['"is" compares whole addresses: enter one (like ann@example.com), or choose contains'],
        "label": ["choose one of your labels"],
    }
    with pytest.raises(InvalidFields) as excinfo:
        mail_filter_create(mailbox=owner, data=_input(value="   ", folder="INBOX"))
    assert _errors(excinfo) == {"value": ["enter the text to look for"],
                                "folder": ["mail arrives in the Inbox anyway: choose another folder"]}
    with pytest.raises(InvalidFields) as excinfo:
        mail_filter_create(mailbox=owner, data=_input(value="x" * 201, action="fly"))
    assert _errors(excinfo) == {"value": ["at most 200 characters"], "action": ["choose what to do with matching mail"]}

    assert (MailFilter.objects.count(), SieveScript.objects.count()) == (0, 0)


def test_a_label_filter_takes_the_mailboxs_own_and_its_accounts_labels(owner, alice):
    shared = label_create(account=alice.account, name="Shared", color="#112233")
    own = label_create(account=alice.account, name="Mine", color="#445566", mailbox=owner)

    for label in (shared, own):
        mail_filter_create(mailbox=owner, data=_input(action="label", label_id=label.pk, folder=""))

    assert [f.label for f in mail_filter_list(mailbox=owner)] == [shared, own]
    assert f'addflag "{own.keyword}";' in SieveScript.objects.get().script


def test_an_update_replaces_the_rule_and_the_published_script(owner):
    mail_filter = mail_filter_create(mailbox=owner, data=_input())
    before = SieveScript.objects.get()

    mail_filter_update(mail_filter=mail_filter, data=_input(action="discard", folder="", stop=False))

    after = SieveScript.objects.get()
    assert (mail_filter_get(mailbox=owner, filter_id=mail_filter.pk).action, mail_filter.folder) == ("discard", "")
    assert after.data_id != before.data_id and "discard;" in after.script and "fileinto" not in after.script


def test_a_bad_update_changes_nothing(owner):
    mail_filter = mail_filter_create(mailbox=owner, data=_input())
    script = SieveScript.objects.get().script

    with pytest.raises(InvalidFields):
        mail_filter_update(mail_filter=mail_filter, data=_input(value=""))

    mail_filter.refresh_from_db()
    assert (mail_filter.value, SieveScript.objects.get().script) == ("receipt", script)


def test_filters_move_up_and_down_and_reorder(owner):
    a, b, c = (mail_filter_create(mailbox=owner, data=_input(value=value)) for value in "abc")

    mail_filter_move(mail_filter=c, offset=-1)
    assert list(mail_filter_list(mailbox=owner)) == [a, c, b]
    mail_filter_move(mail_filter=a, offset=-1)  # already first: stays
    assert list(mail_filter_list(mailbox=owner)) == [a, c, b]
    mail_filters_reorder(mailbox=owner, filter_ids=[b.pk, a.pk, c.pk])
    assert list(mail_filter_list(mailbox=owner)) == [b, a, c]
    script = SieveScript.objects.get().script
    assert script.index('"b"') < script.index('"a"') < script.index('"c"')

    with pytest.raises(InvalidFields):
        mail_filters_reorder(mailbox=owner, filter_ids=[a.pk, b.pk])
    assert list(mail_filter_list(mailbox=owner)) == [b, a, c]


def test_deleting_the_last_filter_unpublishes_the_script(owner):
    mail_filter = mail_filter_create(mailbox=owner, data=_input())

    mail_filter_delete(mail_filter=mail_filter)

    assert (MailFilter.objects.count(), SieveScript.objects.count(), _view_rows()) == (0, 0, [])


def test_another_mailboxs_filter_is_not_found(owner, alice):
    other = make_mailbox(alice.account, "other@example.test")
    store_for(other).ensure_folders()
    theirs = mail_filter_create(mailbox=other, data=_input(folder="Archive"))

    with pytest.raises(MailFilter.DoesNotExist):
        mail_filter_get(mailbox=owner, filter_id=theirs.pk)


def test_a_switched_off_mailbox_has_no_script_in_dovecots_view(owner):
    mail_filter_create(mailbox=owner, data=_input())
    owner.is_active = False
    owner.save(update_fields=["is_active"])

    assert (SieveScript.objects.count(), _view_rows()) == (1, [])


# vacation


def test_a_vacation_reply_is_saved_and_published_with_the_aliases(owner):
    alias_create(mailbox=owner, alias_address="sales@example.test")

    vacation = vacation_set(mailbox=owner, data=VacationInput(enabled=True, subject=" Away ", body="Back soon.\n",
                                                              starts_on=date(2026, 5, 1), ends_on=date(2026, 5, 9),
                                                              days=3))

    assert (vacation.subject, vacation.body, vacation.days) == ("Away", "Back soon.", 3)
    script = SieveScript.objects.get().script
    assert 'vacation :days 3 :subject "Away" :addresses ["ann@example.test", "sales@example.test"] "Back soon.";' \
        in script


def test_bad_vacation_settings_are_named_and_change_nothing(owner):
    vacation_set(mailbox=owner, data=VacationInput(enabled=False, body="Old text"))

    with pytest.raises(InvalidFields) as excinfo:
        vacation_set(mailbox=owner, data=VacationInput(enabled=True, subject="two\nlines", body="  ", days=0,
                                                       starts_on=date(2026, 5, 9), ends_on=date(2026, 5, 1)))

    assert _errors(excinfo) == {"subject": ["one line, without control characters"],
                                "body": ["write the reply senders get"],
                                "days": ["a whole number of days from 1 to 60"],
                                "ends_on": ["the last day comes before the first"]}
    with pytest.raises(InvalidFields) as excinfo:
        vacation_set(mailbox=owner, data=VacationInput(enabled=True, body="x" * 10_001, days=61))
    assert _errors(excinfo) == {"body": ["at most 10000 characters"], "days": ["a whole number of days from 1 to 60"]}
    saved = vacation_get(mailbox=owner)
    assert (saved.enabled, saved.body, SieveScript.objects.count()) == (False, "Old text", 0)


def test_turning_the_vacation_reply_off_unpublishes_it(owner):
    vacation_set(mailbox=owner, data=VacationInput(enabled=True, body="Away"))
    assert SieveScript.objects.count() == 1

    vacation_set(mailbox=owner, data=VacationInput(enabled=False, body="Away"))

    assert (VacationReply.objects.get().body, SieveScript.objects.count()) == ("Away", 0)


def test_an_unsaved_vacation_reply_is_off(owner):
    vacation = vacation_get(mailbox=owner)

    assert (vacation.pk, vacation.enabled, vacation.days) == (None, False, 7)


def test_an_alias_added_or_removed_later_is_published_at_once(owner):
    from mailcore.mailboxes.aliases import alias_delete
    from mailcore.rules.models import SieveScript

    vacation_set(mailbox=owner, data=VacationInput(enabled=True, subject="Away", body="Back soon.", days=3))
    alias = alias_create(mailbox=owner, alias_address="late@example.test")
    assert '"late@example.test"' in SieveScript.objects.get(mailbox=owner).script
    alias_delete(alias=alias)
    assert '"late@example.test"' not in SieveScript.objects.get(mailbox=owner).script


def test_a_mailbox_with_aliases_and_a_script_can_be_deleted(owner):
    from mailcore.rules.models import SieveScript

    vacation_set(mailbox=owner, data=VacationInput(enabled=True, subject="Away", body="Back soon.", days=3))
    alias_create(mailbox=owner, alias_address="gone@example.test")
    owner.delete()
    assert not SieveScript.objects.exists()


def test_vacation_answers_older_than_the_longest_period_are_forgotten(owner):
    from datetime import timedelta

    from django.utils import timezone

    from mailcore.rules.filters import vacation_answers_purge
    from mailcore.rules.models import VacationAnswer

    now = timezone.now()
    VacationAnswer.objects.create(mailbox=owner, sender="old@x.test", handle="h", answered_at=now - timedelta(days=61))
    VacationAnswer.objects.create(mailbox=owner, sender="new@x.test", handle="h", answered_at=now - timedelta(days=59))

    assert vacation_answers_purge() == 1
    assert list(VacationAnswer.objects.values_list("sender", flat=True)) == ["new@x.test"]
