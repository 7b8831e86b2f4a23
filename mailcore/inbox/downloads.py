"""How an attachment or a message's source leaves as a download, the same in the webmail and the REST API:
a name a browser saves under (RFC 6266 `filename*`, any script), a type it cannot render as a page of
ours, and a policy that runs nothing even if it is opened in a tab."""
import re
import unicodedata
from urllib.parse import quote

# What a downloaded attachment keeps as its type: common documents, pictures and archives, which
# the browser hands to the right program. Anything else (HTML, SVG, XML, scripts) is
# application/octet-stream. Downloads are never shown inline whatever the type.
DOWNLOAD_TYPES = frozenset({
    "application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "text/csv",
    "text/calendar", "application/zip", "application/gzip", "audio/mpeg", "audio/ogg", "video/mp4",
    "application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.oasis.opendocument.presentation",
})
DOWNLOAD_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"


def download_filename(name: str) -> str:
    """The attachment's own name without paths, control or bidi-override characters, leading dots."""
    name = unicodedata.normalize("NFC", name or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(char for char in name if not unicodedata.category(char).startswith("C"))
    return name.strip().lstrip(".").strip()[:200] or "attachment"


def _ascii(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9._()+ -]", "_", text).strip(" ._")


def content_disposition(filename: str) -> str:
    """RFC 6266: an ASCII fallback for old clients and the real name as UTF-8 in filename*."""
    stem, dot, extension = filename.rpartition(".")
    if not dot:
        stem, extension = filename, ""
    stem, extension = _ascii(stem) or "attachment", _ascii(extension)
    fallback = f"{stem}.{extension}" if extension else stem
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


def download_type(content_type: str) -> str:
    return content_type if content_type in DOWNLOAD_TYPES else "application/octet-stream"


def download_headers(filename: str, content_type: str) -> dict[str, str]:
    """The response headers of a download named filename (as the message gave it) of content_type."""
    return {
        "Content-Type": content_type,
        "Content-Disposition": content_disposition(download_filename(filename)),
        "Content-Security-Policy": DOWNLOAD_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "private, no-store",
    }
