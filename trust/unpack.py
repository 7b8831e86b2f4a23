"""The report files a message carries: .xml, .xml.gz, .zip (DMARC) and .json, .json.gz (TLS-RPT),
unpacked with a ceiling on what comes out (DMARC_REPORT_MAX_BYTES), so a zip or gzip bomb stops
after that many bytes instead of filling memory."""
import io
import zipfile
import zlib
from email.message import Message

from django.conf import settings

ZIP_MAX_MEMBERS = 4
CHUNK = 64 * 1024
GZIP_TYPES = {"application/gzip", "application/x-gzip", "application/tlsrpt+gzip"}
ZIP_TYPES = {"application/zip", "application/x-zip-compressed", "application/x-zip"}
PLAIN_TYPES = {"text/xml", "application/xml", "application/json", "application/tlsrpt+json"}


class ReportUnreadable(Exception):
    """The message holds no report we can read, or one we refuse; the words go into the SMTP reply."""


def report_files(message: Message) -> list[bytes]:
    """Every report file in the message, unpacked; raises ReportUnreadable for one too big to unpack."""
    found = []
    for part in message.walk():
        if part.is_multipart():
            continue
        name = (part.get_filename() or "").lower()
        kind = part.get_content_type()
        payload = part.get_payload(decode=True) or b""
        if name.endswith(".zip") or kind in ZIP_TYPES:
            found.extend(_unzip(payload))
        elif name.endswith(".gz") or kind in GZIP_TYPES:
            found.append(_gunzip(payload))
        elif name.endswith((".xml", ".json")) or kind in PLAIN_TYPES:
            found.append(_limited(payload))
    return found


def _limit() -> int:
    return settings.DMARC_REPORT_MAX_BYTES


def _too_big() -> ReportUnreadable:
    return ReportUnreadable(f"a report unpacks to more than {_limit()} bytes; refused")


def _limited(data: bytes) -> bytes:
    if len(data) > _limit():
        raise _too_big()
    return data


def _gunzip(data: bytes) -> bytes:
    """At most the limit's bytes out of one gzip member (zlib's max_length: never more in memory)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, _limit() + 1)
    except zlib.error:
        raise ReportUnreadable("a .gz attachment is not valid gzip") from None
    if len(out) > _limit() or inflater.unconsumed_tail:
        raise _too_big()
    return out


def _unzip(data: bytes) -> list[bytes]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ReportUnreadable("a .zip attachment is not a valid zip file") from None
    members = [info for info in archive.infolist() if not info.is_dir()]
    if len(members) > ZIP_MAX_MEMBERS:
        raise ReportUnreadable(f"a .zip attachment holds {len(members)} files; a report has one")
    files, total = [], 0
    for info in members:
        if info.file_size > _limit():  # what the archive claims; the reading below checks what it holds
            raise _too_big()
        content = bytearray()
        try:
            with archive.open(info) as member:
                while chunk := member.read(CHUNK):
                    content += chunk
                    if len(content) + total > _limit():
                        raise _too_big()
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError):
            raise ReportUnreadable("a .zip attachment could not be unpacked") from None
        total += len(content)
        files.append(bytes(content))
    return files
