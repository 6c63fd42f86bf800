"""One frozen settings object, read from the environment (and CLI flags for host/port)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from .data_dir import UnsafePath, create_token_file, read_token_file, secure_data_dir
from .domain.addresses import parse_network
from .budgets.rules import Budgets
from .domain.mail_settings import SmtpSettings
from .domain.retention import KINDS as RETAINED_KINDS
from .domain.retention import MAX_DAYS as MAX_RETENTION_DAYS
from .domain.retention import Retention
from .domain.retention import env_name as retention_env

ADMIN_TOKEN_FILE = "admin-token"
# The operator token opens every property: at least this long, so guessing is hopeless.
MIN_ADMIN_TOKEN = 32


class ConfigError(Exception):
    """A setting is wrong; the service refuses to start and says which."""


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str | None
    data_dir: Path
    admin_token: str | None  # from the environment; None means: use or make the data dir's
    trusted_proxies: tuple[str, ...]
    budgets: Budgets
    host: str = "127.0.0.1"
    port: int = 8080
    # Open client connections past this are answered 503 and closed (each holds memory and
    # a file descriptor; the default file limit is often 1024).
    max_connections: int = 1000
    # The service's address as integrators reach it (e.g. https://api.hotel.example).
    public_url: str | None = None
    # An idle property actor stops after this; it must outlast the one-minute windows it keeps.
    actor_idle_seconds: float = 300.0
    ask_timeout_seconds: float = 10.0
    # After the requests in flight (HTTP_GRACE, 5 s), the actors share this for their last
    # work, level by level: a stop takes at most about 13 s.
    shutdown_grace_seconds: float = 8.0
    janitor_every_seconds: float = 3600.0
    # How long batches, deliveries, sent e-mails, refusals and settled OTA revisions are
    # kept (CONNECTAPI_RETAIN_<KIND>_DAYS); what is still needed is kept whatever its age.
    retention: Retention = Retention()
    # The embedded PostgreSQL is looked at this often, and started again if it died.
    watchdog_seconds: float = 1.0
    # The channel manager: unset URL means the in-process sandbox.
    cm_url: str | None = None
    cm_key: str | None = None
    # Hold every push to the channel manager (maintenance); writes are still accepted.
    push_paused: bool = False
    # Dirty cells missed by a wake-up, or left by a process that died holding a property's
    # push lease (it runs out in 20 s), are found this often: a property is taken over
    # within 30 s of its pusher's death.
    push_sweep_seconds: float = 15.0
    # A pusher gathers a property's changes this long at most after the first before it
    # calls (Channex's certification counts calls: PUT /rates then PUT /restrictions at
    # once is one call). CONNECTAPI_CM_GATHER_MS; 0 sends at once.
    cm_gather_seconds: float = 1.0
    # Read the channel manager's grid back and repair differences (within its read budget).
    reconcile: bool = True
    # The owner's e-mails: sent over SMTP when set, otherwise logged and marked sent.
    smtp_url: str | None = None
    smtp_from: str = "connectapi@localhost"
    outbox_sweep_seconds: float = 30.0
    # Webhooks to http:// and inside addresses: for tests and the sandbox only.
    webhook_allow_private: bool = False
    # OTA bookings: the channel manager's notification must carry this secret (unset: every
    # notification is refused and the timer alone pulls the feed).
    cm_notify_secret: str | None = None
    intake_sweep_seconds: float = 60.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if env is None else env
        proxies = tuple(p.strip() for p in env.get("CONNECTAPI_TRUSTED_PROXIES", "").split(",") if p.strip())
        for proxy in proxies:
            try:
                parse_network(proxy)
            except ValueError as exc:
                raise ConfigError(f"CONNECTAPI_TRUSTED_PROXIES: {exc}") from None
        try:
            window = env.get("CONNECTAPI_TEST_BUDGET_WINDOW_SECONDS")  # tests over real processes only
            budgets = Budgets.from_overrides(env.get("CONNECTAPI_BUDGETS"), float(window) if window else None)
        except ValueError as exc:
            raise ConfigError(f"CONNECTAPI_BUDGETS: {exc}") from None
        settings = cls(
            port=_port(env.get("CONNECTAPI_PORT")),
            database_url=env.get("DATABASE_URL") or None,
            data_dir=Path(env.get("CONNECTAPI_DATA_DIR") or "./var"),
            admin_token=env.get("CONNECTAPI_ADMIN_TOKEN") or None,
            trusted_proxies=proxies,
            budgets=budgets,
            cm_url=env.get("CONNECTAPI_CM_URL") or None,
            cm_key=env.get("CONNECTAPI_CM_KEY") or None,
            push_paused=env.get("CONNECTAPI_PUSH_PAUSED", "").lower() in ("1", "true", "yes"),
            reconcile=env.get("CONNECTAPI_RECONCILE", "on").lower() not in ("0", "off", "false", "no"),
            smtp_url=env.get("CONNECTAPI_SMTP_URL") or None,
            smtp_from=env.get("CONNECTAPI_SMTP_FROM") or "connectapi@localhost",
            webhook_allow_private=env.get("CONNECTAPI_WEBHOOK_ALLOW_PRIVATE", "").lower() in ("1", "true", "yes"),
            cm_notify_secret=env.get("CONNECTAPI_CM_NOTIFY_SECRET") or None,
            max_connections=_positive_int(env, "CONNECTAPI_MAX_CONNECTIONS", 1000),
            cm_gather_seconds=_gather_seconds(env.get("CONNECTAPI_CM_GATHER_MS")),
            public_url=_public_url(env.get("CONNECTAPI_PUBLIC_URL")),
            retention=_retention(env),
        )
        if settings.smtp_url:
            try:
                SmtpSettings.from_url(settings.smtp_url, settings.smtp_from)
            except ValueError as exc:
                raise ConfigError(f"CONNECTAPI_SMTP_URL: {exc}") from None
        if settings.cm_url and not settings.cm_key:
            raise ConfigError("CONNECTAPI_CM_URL is set without CONNECTAPI_CM_KEY")
        return settings.with_overrides(**overrides)

    def with_overrides(self, **overrides: object) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]


def _public_url(text: str | None) -> str | None:
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment \
            or parts.username or parts.password or not text.isprintable():
        raise ConfigError("CONNECTAPI_PUBLIC_URL must be an http(s) address such as https://api.hotel.example")
    return text.rstrip("/")


def _port(text: str | None) -> int:
    """CONNECTAPI_PORT (`serve --port` wins over it), or 8080."""
    if not text:
        return 8080
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
        raise ConfigError(f"CONNECTAPI_PORT must be a port number from 1 to 65535, not {text[:20]!r}")
    return int(text)


def _gather_seconds(text: str | None) -> float:
    if not text:
        return 1.0
    if not (text.isascii() and text.isdigit() and int(text) <= 10_000):
        raise ConfigError(f"CONNECTAPI_CM_GATHER_MS must be a whole number of milliseconds up to 10000, "
                          f"not {text[:20]!r}")
    return int(text) / 1000


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if not text:
        return default
    if not (text.isascii() and text.isdigit() and len(text) <= 9 and int(text) > 0):
        raise ConfigError(f"{name} must be a positive whole number, not {text[:20]!r}")
    return int(text)


def _retention(env: Mapping[str, str]) -> Retention:
    days = {kind: _positive_int(env, retention_env(kind), getattr(Retention(), kind)) for kind in RETAINED_KINDS}
    for kind, value in days.items():
        if value > MAX_RETENTION_DAYS:
            raise ConfigError(f"{retention_env(kind)} must be at most {MAX_RETENTION_DAYS} days, not {value}")
    return Retention(**days)


def available_cores() -> int:
    """The cores this process may run on (its affinity), for `serve --workers auto`."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_admin_token(settings: Settings) -> tuple[str, bool]:
    """The operator token, and whether it was generated just now (so it is shown once).

    From CONNECTAPI_ADMIN_TOKEN when set; else from the data dir; else generated and kept
    there, readable by the owner only. A token shorter than MIN_ADMIN_TOKEN stops the start.
    """
    if settings.admin_token:
        if len(settings.admin_token) < MIN_ADMIN_TOKEN:
            raise ConfigError(f"CONNECTAPI_ADMIN_TOKEN has {len(settings.admin_token)} characters; the operator "
                              f"token needs at least {MIN_ADMIN_TOKEN} (for one: python -c 'import secrets; "
                              "print(secrets.token_urlsafe(32))')")
        return settings.admin_token, False
    path = settings.data_dir / ADMIN_TOKEN_FILE
    try:
        secure_data_dir(settings.data_dir)
        token = read_token_file(path)
        if token is None:
            token = "cat_" + secrets.token_urlsafe(32)
            create_token_file(path, token)
            return token, True
    except UnsafePath as exc:
        raise ConfigError(str(exc)) from None
    if len(token) < MIN_ADMIN_TOKEN:
        raise ConfigError(f"the operator token in {path} has {len(token)} characters, fewer than "
                          f"{MIN_ADMIN_TOKEN}: remove the file (a new token is made at the next start)")
    return token, False
