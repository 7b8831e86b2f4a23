"""What email.received says about a message, and that bad mail never breaks it."""
from mailcore.inbound.parsing import read_or_empty, summarise

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
