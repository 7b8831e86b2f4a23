"""rspamd's symbols in words a mailbox owner understands: why a message went to Junk, was held or
refused. Only symbols that counted against the message are named, the heaviest first."""
from collections.abc import Mapping

# Symbols an owner meets most (rspamd 3.4's names); any other one that scored is named by rspamd's
# own description.
WORDS = {
    "GTUBE": "It contains the standard spam test string (GTUBE).",
    "CLAM_VIRUS": "It contains a virus.",
    "DMARC_POLICY_REJECT": "The sender's domain says mail like this is forged and must be refused (DMARC).",
    "DMARC_POLICY_QUARANTINE": "The sender's domain says mail like this is suspect (DMARC).",
    "DMARC_POLICY_SOFTFAIL": "It was not sent by the servers of the domain it claims to come from (DMARC).",
    "R_SPF_FAIL": "The server that sent it is not allowed to send for the sender's domain (SPF).",
    "R_SPF_SOFTFAIL": "The server that sent it is probably not allowed to send for the sender's domain (SPF).",
    "R_SPF_PERMFAIL": "The sender's domain publishes a broken SPF record.",
    "R_DKIM_REJECT": "Its signature does not match its content: it was changed on the way or forged (DKIM).",
    "R_DKIM_PERMFAIL": "Its signature could not be checked (DKIM).",
    "ARC_REJECT": "The forwarding chain it came through is broken (ARC).",
    "BAYES_SPAM": "It looks like the messages you marked as spam.",
    "FUZZY_DENIED": "It is almost identical to messages already known as spam.",
    "RBL_SPAMHAUS_SBL": "The server that sent it is on a list of spam sources.",
    "RBL_SPAMHAUS_XBL": "The server that sent it is on a list of infected computers.",
    "RCVD_IN_DNSWL_NONE": "",
    "PHISHING": "A link's text shows one address but leads to another (phishing).",
    "PH_SURBL_MULTI": "It links to a site known for phishing.",
    "URIBL_BLACK": "It links to a site known for spam.",
    "SURBL_MULTI": "It links to a site known for spam.",
    "DBL_SPAM": "It links to a domain known for spam.",
    "DBL_PHISH": "It links to a domain known for phishing.",
    "FORGED_SENDER": "The sender in its envelope and the From line differ.",
    "FROM_NEQ_ENVFROM": "",
    "SPOOF_DISPLAY_NAME": "Its sender's name pretends to be someone else.",
    "MIME_BAD_ATTACHMENT": "It has an attachment of a dangerous kind.",
    "MIME_DOUBLE_BAD_EXTENSION": "It has an attachment disguised with a double extension.",
    "MIME_EXE_IN_GEN_SPLIT_RAR": "It has a program hidden in an archive.",
    "MIME_ARCHIVE_IN_ARCHIVE": "It has an archive hidden inside an archive.",
    "HFILTER_HOSTNAME_UNKNOWN": "The server that sent it has no proper name.",
    "HFILTER_HELO_BAREIP": "The server that sent it did not introduce itself properly.",
    "VIOLATED_DIRECT_SPF": "",  # R_SPF_FAIL or R_SPF_SOFTFAIL already says it
    "HFILTER_HELO_IP_A": "The server that sent it did not introduce itself properly.",
    "HFILTER_HELO_NORES_A_OR_MX": "The server that sent it did not introduce itself properly.",
    "HFILTER_HELO_NORESOLVE_MX": "The server that sent it did not introduce itself properly.",
    "HFILTER_HELO_NOT_FQDN": "The server that sent it did not introduce itself properly.",
    "HFILTER_HOSTNAME_1": "The server that sent it has no proper name.",
    "HFILTER_HOSTNAME_2": "The server that sent it has no proper name.",
    "HFILTER_HOSTNAME_3": "The server that sent it has no proper name.",
    "HFILTER_HOSTNAME_4": "The server that sent it has no proper name.",
    "HFILTER_HOSTNAME_5": "The server that sent it has no proper name.",
    "HFILTER_FROMHOST_NORES_A_OR_MX": "The sender's domain cannot receive mail.",
    "HFILTER_FROMHOST_NORESOLVE_MX": "The sender's domain cannot receive mail.",
    "HFILTER_FROMHOST_NOT_FQDN": "The sender's domain is not a proper domain name.",
    "RDNS_NONE": "The server that sent it has no reverse DNS name.",
    "ONCE_RECEIVED": "",
    "MISSING_DATE": "It has no date.",
    "MISSING_MID": "It has no Message-ID.",
    "MISSING_TO": "It has no To line.",
    "R_BAD_CTE_7BIT": "It is badly formatted.",
    "SUBJ_ALL_CAPS": "Its subject is in capital letters.",
    "FREEMAIL_REPLYTO": "Replies would go to a free mail address other than the sender.",
    "REPLYTO_DOM_NEQ_FROM_DOM": "Replies would go to a domain other than the sender's.",
    "HAS_PHPMAILER_SIG": "It was sent by a web script often abused for spam.",
    "FAKE_REPLY": "It pretends to be a reply to a message you never sent.",
    "R_SUSPICIOUS_URL": "It contains a suspicious link.",
    "HTML_SHORT_LINK_IMG_1": "It is mostly a picture with a link.",
    "R_PARTS_DIFFER": "Its text and HTML versions say different things.",
    "MANY_INVISIBLE_PARTS": "It hides text from the reader.",
    "GREYLIST": "",
}
MOST = 6
FIRST = ("CLAM_VIRUS", "GTUBE")


def reasons_for(symbols: Mapping[str, object], *, virus: str = "") -> list[str]:
    """Plain-words reasons for the symbols (name -> an object with score and description, or a
    score), heaviest first, at most MOST of them, each said once."""
    scored = []
    for name, symbol in symbols.items():
        score = float(getattr(symbol, "score", symbol if isinstance(symbol, (int, float)) else 0.0))
        if score > 0 or (score == 0 and WORDS.get(name)):  # GTUBE and the virus are pre-results: no score of their own
            scored.append((name in FIRST, score, name, getattr(symbol, "description", "") or ""))
    reasons: list[str] = []
    for _, _, name, description in sorted(scored, reverse=True):
        words = WORDS.get(name)
        if name == "CLAM_VIRUS" and virus:
            words = f"It contains a virus ({virus})."
        if words is None:
            words = f"{description.rstrip('.')}." if description else ""
        if words and words not in reasons:
            reasons.append(words)
        if len(reasons) == MOST:
            break
    return reasons


def junk_explanation(headers) -> tuple[str, list[str]] | None:
    """Why a stored message is in Junk, from the headers the screening wrote on it (name, value in
    the message's order): (its score as written, the reasons). None when the screening did not put it
    there (no X-Spam-Action: junk of ours). Incoming X-Spam-* and X-Mailwell-* headers are removed
    before screening (mailcore.inbound.screening.remove_our_headers), so the first of each is ours."""
    first: dict[str, str] = {}
    for name, value in headers:
        first.setdefault(name.lower(), " ".join(value.split()))
    if first.get("x-spam-action", "").lower() != "junk":
        return None
    reasons = [reason.strip() for reason in first.get("x-mailwell-reasons", "").split(" | ") if reason.strip()]
    return first.get("x-spam-score", ""), reasons
