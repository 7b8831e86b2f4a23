"""What email.received says about a message, and that bad mail never breaks it."""
import pytest

from mailcore.inbound.parsing import InboundRead, read_or_empty, summarise
from mailcore.store.reading import read

ALTERNATIVE = (
    b"From: =?utf-8?q?J=C3=B6rg?= <jorg@sender.test>\r\nSubject: =?utf-8?b?R3LDvMOfZQ==?=\r\n"
    b"Message-ID: <alt@sender.test>\r\nIn-Reply-To: <a@x>\r\nReferences: <a@x>\r\n\t<b@x>\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary="r"\r\n\r\n'
    b'--r\r\nContent-Type: multipart/alternative; boundary="a"\r\n\r\n'
    b"--a\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlain   text\r\nwins.\r\n"
    b"--a\r\nContent-Type: text/html\r\n\r\n<p>HTML loses</p>\r\n--a--\r\n"
    b'--r\r\nContent-Type: image/png\r\nContent-Disposition: inline; filename="logo.png"\r\n'
    b"Content-ID: <logo>\r\n\r\niVBO\r\n"
    b"--r--\r\n"
)


def test_it_reads_the_headers_the_text_preview_and_ignores_inline_images():
    summary = summarise(read_or_empty(ALTERNATIVE))
    assert (summary.message_id, summary.from_, summary.subject, summary.in_reply_to, summary.references) == (
        "<alt@sender.test>", "Jörg <jorg@sender.test>", "Grüße", "<a@x>", "<a@x> <b@x>")
    assert (summary.preview, summary.has_attachments) == ("Plain text wins.", False)


def test_an_html_only_message_previews_its_text_without_tags_scripts_or_styles():
    raw = (b"Content-Type: text/html\r\n\r\n<html><head><style>p{color:red}</style><title>T</title></head>"
           b"<body><h1>Sale</h1><div>50% &amp; more</div><script>track()</script>"
           b"<p>Today&lt;only&gt;</p></body></html>")
    assert summarise(read_or_empty(raw)).preview == "Sale 50% & more Today<only>"


def test_the_preview_stops_at_200_characters():
    raw = b"Subject: long\r\n\r\n" + b"word " * 100
    assert summarise(read_or_empty(raw)).preview == ("word " * 40).rstrip()
    assert len(summarise(read_or_empty(raw)).preview) == 199


def test_broken_headers_charsets_and_encodings_never_raise():
    raw = (b"From: \"unterminated <<<@@>>\r\nSubject: =?x-unknown?B?SGVsbG8=?=\r\nMessage-ID: no-brackets\r\n"
           b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain; charset="x-klingon\r\n'
           b"Content-Transfer-Encoding: base64\r\n\r\n!!!\r\n"
           b"--b\r\nContent-Disposition: attachment; filename*=bad''%zz\r\n\r\n"
           b"\xff\xfe\r\n--b--\r\n")
    summary = summarise(read_or_empty(raw))
    assert (summary.message_id, summary.has_attachments) == ("", True)


def test_bytes_that_are_not_mail_at_all_give_an_empty_summary():
    summary = summarise(read_or_empty(b"\x00\x01\x02"))
    assert (summary.message_id, summary.subject, summary.from_, summary.preview) == ("", "", "", "")


# The inbound reader reads as mailcore.store.reading does (the embedded inbox listing's reader)

REPORT = (
    b"From: MAILER-DAEMON@relay.test\r\nSubject: Undelivered Mail\r\nMessage-ID: <dsn@relay.test>\r\n"
    b'Content-Type: multipart/report; report-type=delivery-status; boundary="d"\r\n\r\n'
    b"--d\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n"
    b"--d\r\nContent-Type: message/delivery-status\r\n\r\nFinal-Recipient: rfc822; x@y.test\r\nStatus: 5.1.1\r\n"
    b"--d\r\nContent-Type: message/rfc822\r\n\r\nFrom: a@b.test\r\nSubject: Inner\r\n\r\nThe original.\r\n--d--\r\n"
)
LATIN1_WITH_ATTACHMENT = (
    b"From: =?iso-8859-1?q?Andr=E9?= <andre@sender.test>, second@sender.test\r\nSubject: =?iso-8859-1?q?Caf=E9?=\r\n"
    b'Message-ID: <att@sender.test>\r\nContent-Type: multipart/mixed; boundary="m"\r\n\r\n'
    b"--m\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
    b"Voil=E0 le caf=E9.\r\n"
    b"--m\r\nContent-Type: application/pdf\r\n"
    b"Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf\r\n"
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--m--\r\n"
)
HTML_AND_NAMED_TEXT = (
    b'Subject: named\r\nContent-Type: multipart/mixed; boundary="n"\r\n\r\n'
    b'--n\r\nContent-Type: text/plain; name="notes.txt"\r\nContent-Disposition: attachment\r\n\r\nnot the body\r\n'
    b"--n\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>The <b>body</b></p>\r\n"
    b'--n\r\nContent-Type: image/jpeg; name="photo.jpg"\r\n\r\n/9j/\r\n--n--\r\n'
)


def by_reading_read(raw: bytes):
    """The summary and content type as they were made from reading.read(), the inbox listing's reader."""
    message = read(raw, headers=False)
    return summarise(InboundRead(message.message_id, message.from_, message.subject, message.in_reply_to,
                                 message.references, message.text, message.html, message.has_attachments,
                                 message.content_type)), message.content_type


@pytest.mark.parametrize("raw", [ALTERNATIVE, REPORT, LATIN1_WITH_ATTACHMENT, HTML_AND_NAMED_TEXT,
                                 b"Content-Type: text/html\r\n\r\n<p>only html</p>", b"Subject: bare\r\n\r\nbody"])
def test_the_summary_is_the_one_reading_read_gives(raw):
    assert (summarise(read_or_empty(raw)), read_or_empty(raw).content_type) == by_reading_read(raw)


def test_a_header_seen_before_reads_the_same_in_the_next_message():
    first = summarise(read_or_empty(LATIN1_WITH_ATTACHMENT))
    again = summarise(read_or_empty(LATIN1_WITH_ATTACHMENT))
    assert first == again
    assert (again.from_, again.subject, again.has_attachments) == (
        "André <andre@sender.test>, second@sender.test", "Café", True)
    assert again.preview == "Voilà le café."


@pytest.mark.parametrize(("body", "preview"), [
    ("Tab\there,\x00 null\x07 bell\x1b escape\x7f delete", "Tab here, null bell escape delete"),
    ("Grüße\x00 aus\u200b\u2028Köln", "Grüße aus Köln"),  # a zero-width space is not printable
])
def test_the_preview_drops_control_characters_and_keeps_the_words(body, preview):
    raw = b"Content-Type: text/plain; charset=utf-8\r\n\r\n" + body.encode()
    assert summarise(read_or_empty(raw)).preview == preview
