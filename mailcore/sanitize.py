"""Mail HTML made safe to display: an allowlist (nh3), no scripts or handlers, no dangerous URLs,
and remote images held back until the reader allows them."""
from dataclasses import dataclass

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
    "background-color", "border", "border-collapse", "color", "font-family", "font-size", "font-style",
    "font-weight", "height", "line-height", "margin", "max-width", "padding", "text-align", "text-decoration",
    "vertical-align", "white-space", "width",
}
_DROP_WITH_CONTENT = {"script", "style", "title", "head", "iframe", "object", "embed", "noscript", "template", "svg", "math"}


@dataclass(frozen=True)
class SanitizedHtml:
    html: str
    remote_images_blocked: bool


def sanitize_mail_html(html: str, *, allow_remote_images: bool = False) -> SanitizedHtml:
    blocked = False

    def keep(tag: str, attribute: str, value: str) -> str | None:
        nonlocal blocked
        if tag == "img" and attribute == "src":
            if value.startswith(("cid:", "data:image/")):
                return value
            if value.startswith(("http://", "https://", "//")):
                if allow_remote_images:
                    return value
                blocked = True
            return None
        if attribute == "href" and value.strip().lower().startswith("data:"):
            return None
        return value

    clean = nh3.clean(
        html,
        tags=_TAGS,
        clean_content_tags=_DROP_WITH_CONTENT,
        attributes=_ATTRIBUTES,
        attribute_filter=keep,
        url_schemes={"http", "https", "mailto", "cid", "data"},
        filter_style_properties=_STYLE_PROPERTIES,
        link_rel="noopener noreferrer nofollow",
    )
    return SanitizedHtml(clean, blocked)
