"""Mail HTML made safe to display: an allowlist (nh3), no scripts or handlers, no dangerous URLs,
and remote images held back until the reader allows them.

Two passes. nh3 keeps only allowed tags, attributes and CSS properties; its attribute filter
narrows every URL to what a mail may carry (links: http, https, mailto; images: remote
http(s), `cid:`, and raster `data:` images) after normalising it as a browser would (tab and
newline removed, surrounding spaces stripped). Then each `<img>` of nh3's output is decided
as a whole (only its start tag is rewritten; the rest of nh3's output is kept byte for byte):
a remote image is kept only when allowed, a tracking pixel is removed, a `cid:` image is
replaced by what `inline_image` gives for it.

The REST and MCP bodies (and mailbox signatures) use the defaults; the webmail asks for more
with `for_frame` and `inline_image` (mailcore.inbox.display).
"""
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import nh3

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "center", "code", "col", "colgroup", "dd", "del", "div",
    "dl", "dt", "em", "font", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "li", "ol", "p",
    "pre", "q", "s", "small", "span", "strike", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "u", "ul",
}
_ATTRIBUTES = {
    "*": {"align", "bgcolor", "color", "dir", "lang", "style", "title", "valign", "width", "height"},
    "a": {"href", "name"},
    "img": {"src", "alt", "border"},
    "font": {"face", "size"},
    "table": {"border", "cellpadding", "cellspacing"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "ol": {"start", "type"},
}
_STYLE_PROPERTIES = {
    "background-color", "border", "border-collapse", "color", "display", "font-family", "font-size",
    "font-style", "font-weight", "height", "line-height", "margin", "max-height", "max-width", "min-height",
    "min-width", "opacity", "padding", "text-align", "text-decoration", "vertical-align", "visibility",
    "white-space", "width",
}
_DROP_WITH_CONTENT = {"script", "style", "title", "head", "iframe", "object", "embed", "noscript", "template", "svg",
                      "math", "noembed", "noframes", "xmp", "textarea", "select", "applet"}
LINK_REL = "noopener noreferrer nofollow"

# A browser removes these anywhere in a URL before reading it, so "java\tscript:" is "javascript:".
_URL_INVISIBLE = str.maketrans("", "", "\t\n\r")
_URL_EDGES = "".join(chr(code) for code in range(0x21))  # C0 controls and space, stripped at both ends
# Raster images only: an SVG may carry script and links (harmless inside <img>, but never needed).
_DATA_IMAGE = re.compile(r"^data:image/(png|jpeg|jpg|gif|webp)(;[a-z0-9=.+-]*)*,", re.IGNORECASE)
# A style declaration whose value could fetch or run something is dropped whole; a backslash or a
# comment could hide one from a simple reading, so they go too.
_STYLE_UNSAFE = re.compile(r"url\(|image-set\(|image\(|element\(|expression\(|javascript:|vbscript:|@import|"
                           r"behavior|binding|\\|/\*|<|>", re.IGNORECASE)

# What an <img> that is a remote image gets as src before pass 2 decides; the attribute filter
# drops any other data: URL, so a message cannot forge this marker.
_REMOTE_MARK = "data:,mailwell-remote-"

# Known open-tracking services (hosts and their suffixes) and open-pixel paths. Not exhaustive:
# the size and visibility rule below catches most of the rest.
TRACKER_HOSTS = (
    "mailtrack.io", "mltrk.io", "pstmrk.it", "emltrk.com", "open.convertkit-mail.com", "trk.klclick.com",
    "track.customer.io", "t.yesware.com", "app.yesware.com", "mailfoogae.appspot.com", "bananatag.com",
    "getnotify.com", "sidekickopen.com", "t.hubspotemail.net", "track.hubspot.com", "t.signaux.com",
    "doubleclick.net", "google-analytics.com", "bat.bing.com", "pixel.wp.com", "mixpanel.com",
    "tracking.superhuman.com", "r.superhuman.com", "mandrillapp.com", "links.iterable.com",
)
TRACKER_PATH = re.compile(
    r"/(?:(?:track/open|trk/open|wf/open|e/o)(?:[/.?;#]|$)"
    r"|(?:open\.(?:php|aspx|gif|png)|pixel(?:\.gif|\.png)?|beacon(?:\.gif)?|1x1(?:\.gif|\.png)?|spacer\.gif"
    r"|t\.gif|blank\.gif)(?:[?;#]|$))",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(px)?\s*$", re.IGNORECASE)
TINY_PIXELS = 2  # an image this wide or high (or less) is a pixel, not a picture


@dataclass(frozen=True)
class SanitizedHtml:
    html: str
    remote_images_blocked: bool  # the message has remote images (trackers aside) that are not shown
    remote_images: int = 0  # remote images besides trackers, shown or not
    trackers_removed: int = 0
    inlined: frozenset[str] = field(default_factory=frozenset)  # content ids shown from the message's parts


def clean_url(value: str) -> str:
    """A URL as a browser reads it: tab and newline removed anywhere, spaces and controls at the ends."""
    return value.translate(_URL_INVISIBLE).strip(_URL_EDGES)


def _link(value: str) -> str | None:
    url = clean_url(value)
    return url if url.lower().startswith(("http://", "https://", "mailto:")) else None


def _image(value: str) -> str | None:
    url = clean_url(value)
    lowered = url.lower()
    if lowered.startswith(("http://", "https://", "//")):
        return _REMOTE_MARK + url
    if lowered.startswith("cid:") or _DATA_IMAGE.match(url):
        return url
    return None


def _style(value: str) -> str | None:
    kept = [declaration.strip() for declaration in value.split(";")
            if declaration.strip() and not _STYLE_UNSAFE.search(declaration)]
    return "; ".join(kept) or None


def _keep(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "href":
        return _link(value)
    if tag == "img" and attribute == "src":
        return _image(value)
    if attribute == "style":
        return _style(value)
    return value


def remote_url(url: str) -> str:
    """A remote image's address as the page asks for it: always https (the page's CSP allows
    nothing else, and a browser on an https page would upgrade it anyway)."""
    if url.startswith("//"):
        return "https:" + url
    if url.lower().startswith("http://"):
        return "https://" + url[len("http://"):]
    return url


def is_tracker_url(url: str) -> bool:
    try:
        parts = urlsplit(remote_url(url))
        host = (parts.hostname or "").lower()
    except ValueError:
        return True  # an address no browser would read is not a picture worth showing
    if any(host == known or host.endswith("." + known) for known in TRACKER_HOSTS):
        return True
    return bool(TRACKER_PATH.search(parts.path or "/"))


def _pixels(value: str | None) -> float | None:
    found = _NUMBER.match(value or "")
    return float(found.group(1)) if found else None


def _declarations(style: str) -> dict[str, str]:
    found = {}
    for declaration in style.split(";"):
        name, _, value = declaration.partition(":")
        found[name.strip().lower()] = value.strip().lower()
    return found


def is_hidden_or_tiny(attributes: dict[str, str]) -> bool:
    """An image nobody is meant to see: at most 2 pixels wide or high, or hidden by its style."""
    css = _declarations(attributes.get("style") or "")
    for size in (attributes.get("width"), attributes.get("height"), css.get("width"), css.get("height"),
                 css.get("max-width"), css.get("max-height")):
        pixels = _pixels(size)
        if pixels is not None and pixels <= TINY_PIXELS:
            return True
    if css.get("display") == "none" or css.get("visibility") in {"hidden", "collapse"}:
        return True
    opacity = _pixels(css.get("opacity"))
    return opacity is not None and opacity == 0


class _Images(HTMLParser):
    """Finds each <img> start tag of nh3's output with its position, for pass 2."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[tuple[int, int], str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.found.append((self.getpos(), self.get_starttag_text(), {name: value or "" for name, value in attrs}))

    handle_startendtag = handle_starttag


def _img_tag(attributes: dict[str, str]) -> str:
    return "<img" + "".join(f' {name}="{escape(value, quote=True)}"' for name, value in attributes.items()) + ">"


def sanitize_mail_html(html: str, *, allow_remote_images: bool = False, for_frame: bool = False,
                       inline_image: Callable[[str], str | None] | None = None) -> SanitizedHtml:
    """`for_frame`: as the webmail's sandboxed frame shows it: tracking pixels removed (even when
    remote images are allowed), links open in a new tab, remote images asked for over https.
    `inline_image(content_id)` gives the data: URL a `cid:` image is shown with, or None (the image
    is then left without a source); without it `cid:` sources stay for the caller to resolve."""
    clean = nh3.clean(
        html,
        tags=_TAGS,
        clean_content_tags=_DROP_WITH_CONTENT,
        attributes=_ATTRIBUTES,
        attribute_filter=_keep,
        url_schemes={"http", "https", "mailto", "cid", "data"},
        url_relative="pass_through",  # the filter above lets no relative URL through
        filter_style_properties=_STYLE_PROPERTIES,
        link_rel=LINK_REL,
        set_tag_attribute_values={"a": {"target": "_blank"}} if for_frame else None,
    )
    parser = _Images()
    parser.feed(clean)
    parser.close()
    line_starts = [0] + [match.end() for match in re.finditer("\n", clean)]
    pieces, cursor, remote_images, trackers, inlined = [], 0, 0, 0, set()
    for (line, column), text, attributes in parser.found:
        start = line_starts[line - 1] + column
        src = attributes.get("src", "")
        remote = src.startswith(_REMOTE_MARK)
        if remote:
            src = src[len(_REMOTE_MARK):]
        if remote and for_frame and (is_tracker_url(src) or is_hidden_or_tiny(attributes)):
            trackers += 1
            replacement = ""
        elif remote:
            remote_images += 1
            if allow_remote_images:
                attributes["src"] = remote_url(src) if for_frame or src.startswith("//") else src
                attributes["referrerpolicy"] = "no-referrer"
            else:
                attributes.pop("src")
            replacement = _img_tag(attributes)
        elif inline_image is not None and src.lower().startswith("cid:"):
            content_id = unquote(src[4:])
            data_url = inline_image(content_id)
            if data_url and _DATA_IMAGE.match(data_url):
                attributes["src"] = data_url
                inlined.add(content_id)
            else:
                attributes.pop("src")
            replacement = _img_tag(attributes)
        else:
            continue
        pieces += [clean[cursor:start], replacement]
        cursor = start + len(text)
    pieces.append(clean[cursor:])
    return SanitizedHtml("".join(pieces), remote_images_blocked=bool(remote_images) and not allow_remote_images,
                         remote_images=remote_images, trackers_removed=trackers, inlined=frozenset(inlined))
