"""Where the service's e-mails go: CONNECTAPI_SMTP_URL, parsed."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    host: str
    port: int
    tls: str  # "ssl" (smtps://), "starttls" (smtp://...?starttls=1) or "none"
    user: str | None
    password: str | None
    sender: str

    @classmethod
    def from_url(cls, url: str, sender: str) -> SmtpSettings:
        """smtp://[user:password@]host[:port][?starttls=1] or smtps://…; ValueError when malformed."""
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("must be smtp://[user:password@]host[:port] or smtps://…")
        starttls = parse_qs(parts.query).get("starttls", ["0"])[0] in ("1", "true", "yes")
        tls = "ssl" if parts.scheme == "smtps" else "starttls" if starttls else "none"
        port = parts.port or (465 if tls == "ssl" else 587 if tls == "starttls" else 25)
        return cls(parts.hostname, port, tls, unquote(parts.username) if parts.username else None,
                   unquote(parts.password) if parts.password else None, sender)

    def __repr__(self) -> str:  # the password never reaches a log line
        return f"SmtpSettings(host={self.host!r}, port={self.port}, tls={self.tls!r}, sender={self.sender!r})"
