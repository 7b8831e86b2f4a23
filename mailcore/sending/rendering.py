"""`{{placeholder}}` substitution for templates: HTML-escaped in HTML, verbatim in text."""
import html
import re

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def render(text: str, variables: dict, *, escape_html: bool) -> str:
    """Replace known placeholders; unknown ones are left as they are so a typo is visible."""

    def substitute(match: re.Match) -> str:
        name = match.group(1)
        if name not in variables:
            return match.group(0)
        value = "" if variables[name] is None else str(variables[name])
        return html.escape(value) if escape_html else value

    return PLACEHOLDER.sub(substitute, text)


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))
