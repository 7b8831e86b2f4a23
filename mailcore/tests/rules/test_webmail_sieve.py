"""The Sieve script made from an owner's filter and vacation rows: exact text, escaping that no
typed value can break out of, every script compiled by Pigeonhole with production's settings
(docker/dovecot/mailwell.conf), and the embedded store's reading of the rows agreeing with what
Pigeonhole does with the script (its `sieve-test` tool, message by message)."""
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import date
from email.message import EmailMessage
from pathlib import Path

import pytest

from mailcore.mailboxes.models import Label
from mailcore.rules.delivery import Filing, filing_for
from mailcore.rules.models import MailFilter, VacationReply
from mailcore.rules.sieve import quoted, render
from testkit.dovecot import CONFIG_DIR

ADDRESSES = ["ann@example.test", "sales@example.test"]
NOREPLY = ('["noreply*", "no-reply*", "no_reply*", "donotreply*", "do-not-reply*", "do_not_reply*"]')
HOSTILE = [
    'say "hi"',
    "back\\slash",
    "ends with a backslash \\",
    '"; discard; "',
    '\\"; discard; #',
    '" } discard; if true { "',
    "${hex:41} ${unicode:263A} ${variable}",
    "text:\r\n.\r\ndiscard;",
    "# not a comment /* nor this */",
    "Grüße, 東京 ✓",
    "tab\there",
    "nul\x00byte",
]


def _filter(field="subject", match="contains", value="x", action="move", folder="Work", label=None, stop=True,
            enabled=True) -> MailFilter:
    return MailFilter(field=field, match=match, value=value, action=action, folder=folder, label=label, stop=stop,
                      enabled=enabled)


def _message(subject="Hello", *, sender="Bob Example <bob@elsewhere.test>", to="ann@example.test", cc=None,
             headers=None) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    if cc:
        message["Cc"] = cc
    message["Subject"] = subject
    message["Message-ID"] = "<m1@elsewhere.test>"
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content("Body.")
    return message.as_bytes()


# Pigeonhole's own tools, with the production service's Sieve settings


@pytest.fixture(scope="module")
def pigeonhole() -> Iterator[Path]:
    """A directory the mail user can reach (Pigeonhole's tools drop to it) with a config that
    includes docker/dovecot/mailwell.conf: the production service's Sieve settings."""
    if not shutil.which("sievec") or not shutil.which("sieve-test"):
        pytest.fail("Pigeonhole's tools are missing: install dovecot-sieve (scripts/install-system-deps.sh).")
    directory = Path(tempfile.mkdtemp(prefix="mailwell-sieve-"))
    directory.chmod(0o755)
    shutil.chown(directory, "mail", "mail")
    (directory / "dovecot.conf").write_text(
        f"!include {CONFIG_DIR / 'mailwell.conf'}\n"
        f"mail_home = {directory}\nbase_dir = {directory}/run\nstate_dir = {directory}/state\nlog_path = /dev/stderr\n")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _write(directory: Path, name: str, content: bytes | str) -> Path:
    path = directory / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    shutil.chown(path, "mail", "mail")
    return path


def compile_script(directory: Path, script: str) -> subprocess.CompletedProcess:
    source = _write(directory, "script.sieve", script)
    return subprocess.run(["sievec", "-c", str(directory / "dovecot.conf"), str(source), str(directory / "s.svbin")],
                          capture_output=True, text=True, check=False)


def run_script(directory: Path, script: str, raw: bytes, *, envelope_from: str = "bob@elsewhere.test") -> str:
    """What Pigeonhole does with this message (sieve-test's report of its actions)."""
    source = _write(directory, "run.sieve", script)
    message = _write(directory, "message.eml", raw)
    result = subprocess.run(["sieve-test", "-c", str(directory / "dovecot.conf"), "-f", envelope_from,
                             "-r", ADDRESSES[0], str(source), str(message)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def pigeonhole_filing(report: str) -> Filing:
    """sieve-test's report as a Filing: folders with flags, and the Inbox copy (implicit keep)."""
    performed, _, implicit = report.partition("Implicit keep:")
    stores: list[list] = []
    for section, kept in ((performed, False), (implicit, True)):
        for line in section.splitlines():
            line = line.strip()
            if line.startswith("* store message in folder: "):
                stores.append([line.removeprefix("* store message in folder: "), (), kept])
            elif line.startswith("+ add IMAP flags: "):
                stores[-1][1] = tuple(line.removeprefix("+ add IMAP flags: ").split())
    inbox = [flags for folder, flags, kept in stores if kept and folder == "INBOX"]
    return Filing(bool(inbox), inbox[0] if inbox else (),
                  tuple((folder, flags) for folder, flags, kept in stores if not kept))


def _normalised(filing: Filing) -> tuple:
    """Pigeonhole reports flags in lower case."""
    def flags(values):
        return tuple(sorted(value.lower() for value in values))

    return filing.keep, flags(filing.flags), tuple((folder, flags(values)) for folder, values in filing.folders)


# quoting


def test_quoted_escapes_backslashes_and_double_quotes():
    assert quoted('say "hi" \\o/') == '"say \\"hi\\" \\\\o/"'


def test_quoted_turns_line_breaks_into_spaces_on_one_line_and_crlf_in_a_text():
    assert quoted("one\ntwo\r\nthree\rfour") == '"one two three four"'
    assert quoted("one\ntwo\r\nthree", multiline=True) == '"one\r\ntwo\r\nthree"'


def test_quoted_drops_nul_and_control_characters_but_keeps_tabs_and_unicode():
    assert quoted("a\x00b\x07c\x1bd\x7fe\tf ✓") == '"abcde\tf ✓"'


# rendering


def test_nothing_is_rendered_without_enabled_filters_or_a_vacation_reply_that_is_on():
    assert render(filters=[], vacation=None, addresses=ADDRESSES) == ""
    assert render(filters=[_filter(enabled=False)], vacation=VacationReply(enabled=False, body="Away"),
                  addresses=ADDRESSES) == ""


def test_filters_and_vacation_render_to_one_script_in_order_requiring_only_what_they_use():
    label = Label(pk=7, name="Team", color="#123456")
    filters = [
        _filter(field="from", match="is", value="boss@corp.test", action="star", stop=False),
        _filter(field="to", match="contains", value="team@", action="label", label=label, stop=False),
        _filter(field="subject", value="invoice", action="move", folder="Bills/2026"),
        _filter(field="subject", match="is", value="Daily digest", action="mark_read"),
        _filter(field="from", value="spam.test", action="discard", stop=False),
        _filter(field="subject", value="never", action="discard", enabled=False),
    ]
    vacation = VacationReply(enabled=True, subject="Away until Monday", body="Hello,\nI am away.\n", days=5,
                             starts_on=date(2026, 12, 20), ends_on=date(2027, 1, 4))

    script = render(filters=filters, vacation=vacation, addresses=ADDRESSES)

    assert script == (
        "# Mailwell: made from this mailbox's filter and vacation settings. Changes made here are replaced.\r\n"
        'require ["date", "envelope", "fileinto", "imap4flags", "relational", "vacation"];\r\n'
        "\r\n"
        "# Vacation reply\r\n"
        'if allof(currentdate :zone "+0000" :value "ge" "date" "2026-12-20", '
        'currentdate :zone "+0000" :value "le" "date" "2027-01-04", '
        f'not envelope :localpart :matches "from" {NOREPLY}, '
        f'not address :localpart :matches ["from", "sender"] {NOREPLY}) {{\r\n'
        '  vacation :days 5 :subject "Away until Monday" :addresses ["ann@example.test", "sales@example.test"] '
        '"Hello,\r\nI am away.\r\n";\r\n'
        "}\r\n"
        "\r\n# Filter 1\r\n"
        'if address :all :is ["from"] "boss@corp.test" {\r\n  addflag "\\\\Flagged";\r\n}\r\n'
        "\r\n# Filter 2\r\n"
        'if header :contains ["to", "cc"] "team@" {\r\n  addflag "$label7";\r\n}\r\n'
        "\r\n# Filter 3\r\n"
        'if header :contains ["subject"] "invoice" {\r\n  fileinto "Bills/2026";\r\n  stop;\r\n}\r\n'
        "\r\n# Filter 4\r\n"
        'if header :is ["subject"] "Daily digest" {\r\n  addflag "\\\\Seen";\r\n  stop;\r\n}\r\n'
        "\r\n# Filter 5\r\n"
        'if header :contains ["from"] "spam.test" {\r\n  discard;\r\n}\r\n'
    )


def test_a_vacation_reply_without_dates_or_subject_only_skips_noreply_senders():
    script = render(filters=[], vacation=VacationReply(enabled=True, body="Away.", days=7), addresses=ADDRESSES[:1])

    assert script.endswith('require ["envelope", "vacation"];\r\n\r\n# Vacation reply\r\n'
                           f'if allof(not envelope :localpart :matches "from" {NOREPLY}, '
                           f'not address :localpart :matches ["from", "sender"] {NOREPLY}) {{\r\n'
                           '  vacation :days 7 :addresses ["ann@example.test"] "Away.";\r\n}\r\n')


def test_a_vacation_reply_with_only_a_first_day_tests_only_that(pigeonhole):
    vacation = VacationReply(enabled=True, body="Away.", days=7, starts_on=date(2026, 1, 2))
    script = render(filters=[], vacation=vacation, addresses=ADDRESSES)

    assert 'if allof(currentdate :zone "+0000" :value "ge" "date" "2026-01-02", not envelope' in script
    assert "2027" not in script
    assert compile_script(pigeonhole, script).returncode == 0


@pytest.mark.parametrize("sender", ["noreply@shop.test", "No-Reply@shop.test", "donotreply@bank.test",
                                    "do-not-reply+alerts@bank.test"])
def test_pigeonhole_sends_no_vacation_reply_to_a_noreply_sender(pigeonhole, sender):
    script = render(filters=[], vacation=VacationReply(enabled=True, body="Away.", days=7), addresses=ADDRESSES)

    from_envelope = run_script(pigeonhole, script, _message("Your order"), envelope_from=sender)
    from_header = run_script(pigeonhole, script, _message("Your order").replace(
        b"From: ", f"From: Shop <{sender}>\r\nX-Was: ".encode(), 1))
    answered = run_script(pigeonhole, script, _message("Your order"), envelope_from="bob@shop.test")

    assert "send vacation message" not in from_envelope
    assert "send vacation message" not in from_header
    assert "send vacation message" in answered
    assert "store message in folder: INBOX" in from_envelope


# Pigeonhole compiles every script, and no typed value escapes its string


def test_every_kind_of_filter_and_the_vacation_reply_compile_with_production_settings(pigeonhole):
    label = Label(pk=3, name="L", color="#000000")
    for field in MailFilter.Field.values:
        for match in MailFilter.Match.values:
            for action in MailFilter.Action.values:
                value = "ann@example.test" if match == "is" and field != "subject" else "word"
                script = render(filters=[_filter(field=field, match=match, value=value, action=action, label=label)],
                                vacation=VacationReply(enabled=True, body="Away", days=60, ends_on=date(2030, 1, 1)),
                                addresses=ADDRESSES)
                result = compile_script(pigeonhole, script)
                assert result.returncode == 0, (field, match, action, result.stderr)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_compiles_and_matches_itself_exactly(pigeonhole, value):
    script = render(filters=[_filter(field="subject", match="is", value=value, action="move", folder="Work")],
                    vacation=None, addresses=ADDRESSES)
    assert compile_script(pigeonhole, script).returncode == 0
    typed = quoted(value)[1:-1].replace('\\"', '"').replace("\\\\", "\\")  # the value as Sieve reads it

    same = pigeonhole_filing(run_script(pigeonhole, script, _message(typed)))
    other = pigeonhole_filing(run_script(pigeonhole, script, _message("Something else")))

    assert same == Filing(False, (), (("Work", ()),))
    assert other == Filing(True, ())  # nothing was discarded: the value never became a command


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_vacation_subject_and_text_reach_the_reply_exactly(pigeonhole, value):
    vacation = VacationReply(enabled=True, subject=f"Away {value}", body=f"Back soon.\n{value}\nAnn", days=3)
    script = render(filters=[], vacation=vacation, addresses=ADDRESSES)
    assert compile_script(pigeonhole, script).returncode == 0

    report = run_script(pigeonhole, script, _message("Question"))

    subject = quoted(f"Away {value}")[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    body = quoted(f"Back soon.\n{value}\nAnn", multiline=True)[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    assert f"=> subject : {subject}\n" in report
    assert f"START MESSAGE\n{body.replace(chr(13), '')}\nEND MESSAGE" in report.replace("\r", "")
    assert "store message in folder: INBOX" in report  # the vacation reply keeps the message


# the embedded store reads the rows as Pigeonhole runs the script

LABEL = Label(pk=5, name="Team", color="#000000")
AGREEMENT = {
    "a move by subject, any case": (
        [_filter(value="invoice", folder="Bills")], _message("Your INVOICE 42")),
    "no match keeps the message in the Inbox": (
        [_filter(value="invoice", folder="Bills")], _message("Lunch?")),
    "flags gather until a move files the copy": (
        [_filter(field="from", match="is", value="boss@corp.test", action="star", stop=False),
         _filter(value="urgent", folder="Work")],
        _message("URGENT: now", sender="The Boss <BOSS@corp.test>")),
    "flags without a move stay on the Inbox copy": (
        [_filter(field="to", value="team@", action="label", label=LABEL, stop=False),
         _filter(field="to", value="team@", action="mark_read", stop=False)],
        _message("Standup", to="team@example.test")),
    "delete": (
        [_filter(field="from", value="spam.test", action="discard")], _message("Win", sender="x@spam.test")),
    "stop ends the run": (
        [_filter(value="a", action="mark_read"), _filter(value="a", action="discard")], _message("a note")),
    "to or cc with is compares addresses": (
        [_filter(field="to", match="is", value="sales@example.test", folder="Sales")],
        _message("Quote", to="someone@else.test", cc="Sales Desk <Sales@Example.test>")),
    "is on the subject is the whole subject": (
        [_filter(match="is", value="Daily digest", folder="Digests")], _message("Daily digest, again")),
    "an encoded subject is matched decoded": (
        [_filter(value="für März", folder="Bills")], _message("Rechnung für März")),
    "two moves file two copies, each with the flags of its moment": (
        [_filter(value="report", folder="Archive", stop=False),
         _filter(value="report", action="star", stop=False),
         _filter(value="report", folder="Work")], _message("Weekly report")),
    "a disabled filter does nothing": (
        [_filter(value="report", action="discard", enabled=False)], _message("Weekly report")),
    "contains on From sees the display name": (
        [_filter(field="from", value="Example", folder="People")], _message("Hi")),
}


@pytest.mark.parametrize("case", list(AGREEMENT))
def test_the_embedded_store_files_a_message_as_pigeonhole_does(pigeonhole, case):
    filters, raw = AGREEMENT[case]
    script = render(filters=filters, vacation=None, addresses=ADDRESSES)

    assert _normalised(filing_for(filters, raw)) == _normalised(pigeonhole_filing(run_script(pigeonhole, script, raw)))
