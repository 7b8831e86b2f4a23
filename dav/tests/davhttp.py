"""Raw WebDAV requests for the tests (caldav has little CardDAV) and a reader of multistatus bodies."""
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

import httpx

NS = {"d": "DAV:", "cal": "urn:ietf:params:xml:ns:caldav", "card": "urn:ietf:params:xml:ns:carddav",
      "cs": "http://calendarserver.org/ns/", "ical": "http://apple.com/ns/ical/"}
BOOK = "/dav/addressbooks/ann@example.test/contacts/"
CALENDAR = "/dav/calendars/ann@example.test/calendar/"


@dataclass
class Answer:
    """One DAV:response: its href, status (when it has one) and properties by status."""
    href: str
    status: str | None = None
    props: dict[str, ET.Element] = field(default_factory=dict)  # found (200) properties by prefixed name
    missing: dict[str, str] = field(default_factory=dict)  # other properties: prefixed name -> status code

    def text(self, name: str) -> str:
        return (self.props[name].text or "").strip()

    def hrefs(self, name: str) -> list[str]:
        return [(href.text or "").strip() for href in self.props[name].findall("d:href", NS)]


def prefixed(tag: str) -> str:
    for prefix, uri in NS.items():
        if tag.startswith(f"{{{uri}}}"):
            return f"{prefix}:{tag[len(uri) + 2:]}"
    return tag


def multistatus(response: httpx.Response) -> list[Answer]:
    assert response.status_code == 207, (response.status_code, response.text)
    root = ET.fromstring(response.content)
    answers = []
    for item in root.findall("d:response", NS):
        answer = Answer(href=item.findtext("d:href", namespaces=NS).strip(),
                        status=item.findtext("d:status", namespaces=NS))
        for propstat in item.findall("d:propstat", NS):
            code = propstat.findtext("d:status", namespaces=NS).split()[1]
            for prop in propstat.find("d:prop", NS):
                if code == "200":
                    answer.props[prefixed(prop.tag)] = prop
                else:
                    answer.missing[prefixed(prop.tag)] = code
        answers.append(answer)
    return answers


def sync_token_of(response: httpx.Response) -> str:
    return ET.fromstring(response.content).findtext("d:sync-token", namespaces=NS)


def error_conditions(response: httpx.Response) -> list[str]:
    return [prefixed(child.tag) for child in ET.fromstring(response.content)]


def props_body(*names: str, root: str = "d:propfind", inner: str = "") -> str:
    props = "".join(f"<{name}/>" for name in names)
    spaces = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in NS.items())
    return f'<?xml version="1.0"?><{root} {spaces}><d:prop>{props}</d:prop>{inner}</{root}>'


def propfind(client: httpx.Client, path: str, *names: str, depth: str = "0") -> httpx.Response:
    return client.request("PROPFIND", path, content=props_body(*names), headers={"Depth": depth,
                                                                                 "Content-Type": "application/xml"})


def report(client: httpx.Client, path: str, body: str, depth: str = "1") -> httpx.Response:
    return client.request("REPORT", path, content=body, headers={"Depth": depth, "Content-Type": "application/xml"})


def vcard(uid: str, name: str, email: str = "", version: str = "3.0") -> str:
    given, family = name.split()[0], name.split()[-1]
    lines = ["BEGIN:VCARD", f"VERSION:{version}", f"UID:{uid}", f"FN:{name}", f"N:{family};{given};;;"]
    if email:
        lines.append(f"EMAIL;TYPE=INTERNET:{email}")
    return "\r\n".join([*lines, "END:VCARD", ""])
