from mailcore.credentials import credential_new, digest_matches, prefix_of
from mailcore.mailboxes.passwords import mailbox_password_hash, mailbox_password_verify


def test_a_credential_is_high_entropy_with_a_readable_prefix():
    credentials = [credential_new("mk") for _ in range(500)]
    assert len({c.raw for c in credentials}) == 500
    for c in credentials:
        assert c.raw.startswith("mk_") and len(c.raw) >= 16 + 43
        assert prefix_of(c.raw, "mk") == c.prefix
        assert digest_matches(c.raw, c.digest)
        assert not digest_matches(c.raw + "x", c.digest)


def test_malformed_values_have_no_prefix():
    for raw in ("", "mk_", "mk_abc", "st_" + "a" * 12 + "_" + "b" * 43, "mk_" + "a" * 12 + "-" + "b" * 43):
        assert prefix_of(raw, "mk") is None


def test_mailbox_passwords_use_a_scheme_dovecot_verifies():
    stored = mailbox_password_hash("s3cret-pass")
    assert stored.startswith("{ARGON2ID}$argon2id$")
    assert mailbox_password_verify("s3cret-pass", stored)
    assert not mailbox_password_verify("wrong", stored)
