"""Backups an operator can restore from: the database (pg_dump's custom format on PostgreSQL, the
SQLite backup API on the embedded default) and Dovecot's mail directory (a tar of the maildirs;
maildir files are never changed in place, so a copy taken while mail arrives is consistent per
message), with a manifest of SHA-256 sums checked before anything is restored.

`manage.py backup DIR` writes DIR/<UTC time>/; `manage.py restore DIR/<UTC time> [--database-url
URL] [--mail-dir DIR]` puts it back, into the live database and mail directory or (for a restore
drill) into others."""
import hashlib
import json
import os
import sqlite3
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

MANIFEST = "manifest.json"


class BackupError(Exception):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _pg_env(config: dict) -> dict:
    env = {**os.environ, "PGHOST": config["HOST"] or "127.0.0.1", "PGPORT": str(config["PORT"] or 5432),
           "PGUSER": config["USER"] or "", "PGDATABASE": config["NAME"]}
    if config.get("PASSWORD"):
        env["PGPASSWORD"] = config["PASSWORD"]
    return env


def _run(command: list[str], env: dict) -> None:
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise BackupError(f"{command[0]} failed: {result.stderr.strip()[-2000:]}")


def _dump_database(config: dict, target: Path) -> str:
    if config["ENGINE"] == "django.db.backends.postgresql":
        _run(["pg_dump", "--format=custom", "--no-owner", "--file", str(target / "database.dump")], _pg_env(config))
        return "database.dump"
    if config["ENGINE"] == "django.db.backends.sqlite3":
        source, copy = sqlite3.connect(config["NAME"]), sqlite3.connect(target / "database.sqlite3")
        with copy:
            source.backup(copy)  # a consistent copy while the app writes
        source.close()
        copy.close()
        return "database.sqlite3"
    raise BackupError(f"no backup for {config['ENGINE']}")


def backup(*, database: dict, mail_dir: Path | None, to: Path) -> Path:
    """A new backup directory under `to`; returns it."""
    target = to / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target.mkdir(parents=True)
    files = [_dump_database(database, target)]
    if mail_dir is not None:
        with tarfile.open(target / "mail.tar.gz", "w:gz") as archive:
            archive.add(mail_dir, arcname=".")
        files.append("mail.tar.gz")
    manifest = {"created_at": datetime.now(UTC).isoformat(), "database": files[0],
                "files": {name: _sha256(target / name) for name in files}}
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return target


def _checked(source: Path) -> dict:
    manifest = json.loads((source / MANIFEST).read_text())
    for name, expected in manifest["files"].items():
        if _sha256(source / name) != expected:
            raise BackupError(f"{name} does not match its manifest: the backup is damaged")
    return manifest


def restore(*, source: Path, database: dict, mail_dir: Path | None) -> None:
    """Put a backup back: the database's tables replaced, the mail directory filled (owners kept)."""
    manifest = _checked(source)
    config = database
    if manifest["database"] == "database.dump":
        if config["ENGINE"] != "django.db.backends.postgresql":
            raise BackupError("a PostgreSQL backup restores into PostgreSQL")
        _run(["pg_restore", "--clean", "--if-exists", "--no-owner", "--exit-on-error", "--dbname",
              config["NAME"], str(source / "database.dump")], _pg_env(config))
    else:
        if config["ENGINE"] != "django.db.backends.sqlite3":
            raise BackupError("an SQLite backup restores into SQLite")
        backup_copy, live = sqlite3.connect(source / "database.sqlite3"), sqlite3.connect(config["NAME"])
        with live:
            backup_copy.backup(live)
        backup_copy.close()
        live.close()
    if mail_dir is not None and "mail.tar.gz" in manifest["files"]:
        mail_dir.mkdir(parents=True, exist_ok=True)
        with tarfile.open(source / "mail.tar.gz") as archive:
            archive.extractall(mail_dir, filter="fully_trusted")  # our own archive, checked against its manifest
