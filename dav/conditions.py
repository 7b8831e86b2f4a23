"""Entity tags as headers carry them, and the If-Match / If-None-Match test that GET, PUT, DELETE and MOVE share."""


def quoted_etag(etag: str) -> str:
    return f'"{etag}"'


def header_etags(header: str) -> list[str]:
    """The entity tags of an If-Match / If-None-Match header, without quotes ("*" kept as is)."""
    return [part.strip().removeprefix("W/").strip('"') for part in header.split(",") if part.strip()]


def preconditions_fail(request, obj) -> bool:
    """If-Match / If-None-Match against the current resource (None: it does not exist)."""
    if_match = request.META.get("HTTP_IF_MATCH")
    if if_match is not None:
        tags = header_etags(if_match)
        if obj is None or not ("*" in tags or obj.etag in tags):
            return True
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match is not None:
        tags = header_etags(if_none_match)
        if obj is not None and ("*" in tags or obj.etag in tags):
            return True
    return False
