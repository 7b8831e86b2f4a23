"""What the webmail shows of a message: the known XSS vectors come out inert, remote images wait for
consent and tracking pixels go even after it, cid: images are inlined as data: URLs, plain text gets
clickable links (escaped first)."""
import re

import pytest

from mailcore.inbox.display import frame_document, linkify
from mailcore.sanitize import sanitize_mail_html
from mailcore.tests.xss_corpus import XSS_CORPUS

# A live script, handler or navigation, or a request to the remote host (links excepted: a link
# is only followed when the reader clicks it, into a new tab).
DANGERS = [
    (re.compile(r"<\s*(script|iframe|object|embed|form|input|button|base|meta|link|style|svg|math|video|audio|template)\b",
                re.I), "a dangerous element"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "an event handler"),
    (re.compile(r"(javascript|vbscript)\s*:", re.I), "a script URL"),
    (re.compile(r"data:(text|application|image/svg)", re.I), "an active data: URL"),
    (re.compile(r"expression\s*\(|url\s*\(|@import", re.I), "CSS that fetches or runs"),
    (re.compile(r"\b(src|srcset|background|poster|data|action|formaction)\s*=\s*[\"']?[^\"'>\s]*evil\.example", re.I),
     "a request to the remote host"),
]


def dangers(html: str) -> list[str]:
    return [what for pattern, what in DANGERS if pattern.search(html)]


def body_of(document: str) -> str:
    return document.split("<body>", 1)[1]


@pytest.mark.parametrize(("name", "html"), XSS_CORPUS, ids=[name for name, _ in XSS_CORPUS])
def test_every_known_vector_comes_out_inert(name, html):
    clean = sanitize_mail_html(html, for_frame=True)

    assert dangers(clean.html) == [], name


@pytest.mark.parametrize(("name", "html"), XSS_CORPUS, ids=[name for name, _ in XSS_CORPUS])
def test_allowing_images_still_lets_no_script_or_tracker_through(name, html):
    clean = sanitize_mail_html(html, for_frame=True, allow_remote_images=True)

    remaining = [what for what in dangers(clean.html) if what != "a request to the remote host"]
    assert remaining == [], name
    assert "open.gif" not in clean.html and "o.gif" not in clean.html  # trackers go even after consent


def test_the_corpus_holds_at_least_twenty_vectors():
    assert len(XSS_CORPUS) >= 20


def test_remote_images_are_counted_and_held_back_until_allowed():
    html = '<img src="https://cdn.example/photo.jpg" alt="photo" width="300">'

    held = sanitize_mail_html(html, for_frame=True)
    shown = sanitize_mail_html(html, for_frame=True, allow_remote_images=True)

    assert held.remote_images_blocked and held.remote_images == 1 and "cdn.example" not in held.html
    assert 'src="https://cdn.example/photo.jpg"' in shown.html and 'referrerpolicy="no-referrer"' in shown.html


@pytest.mark.parametrize("html", [
    '<img src="https://cdn.example/p.gif" width="1" height="1">',
    '<img src="https://cdn.example/p.gif" style="display:none">',
    '<img src="https://cdn.example/p.gif" width="0">',
])
def test_tracking_pixels_are_removed_and_counted(html):
    clean = sanitize_mail_html(html, for_frame=True, allow_remote_images=True)

    assert clean.trackers_removed == 1 and "cdn.example" not in clean.html


def test_cid_images_are_inlined_and_unknown_ones_lose_their_source():
    png = "data:image/png;base64,iVBORw0KGgo="

    clean = sanitize_mail_html('<img src="cid:logo@x"><img src="cid:missing@x">', for_frame=True,
                               inline_image=lambda content_id: png if content_id == "logo@x" else None)

    assert clean.html.count(png) == 1 and "cid:" not in clean.html


def test_links_open_in_a_new_tab_without_a_referrer():
    clean = sanitize_mail_html('<a href="https://example.org/">x</a>', for_frame=True)

    assert 'target="_blank"' in clean.html and "noopener" in clean.html and "noreferrer" in clean.html


def test_the_frame_document_carries_its_own_policy():
    document = frame_document("<p>x</p>", remote_images=False)

    assert "default-src 'none'; img-src data:;" in document and body_of(document) == "<p>x</p></body></html>"
    assert "img-src data: https:;" in frame_document("<p>x</p>", remote_images=True)


def test_plain_text_is_escaped_before_links_are_made():
    html = str(linkify('See https://example.org/a?b=1&c=2. <script>alert(1)</script> or write to amy@example.org'))

    assert '<a href="https://example.org/a?b=1&amp;c=2" target="_blank"' in html
    assert "&lt;script&gt;" in html and "<script" not in html
    assert '<a href="mailto:amy@example.org">amy@example.org</a>' in html
    assert 'href="javascript' not in str(linkify("javascript:alert(1)"))
