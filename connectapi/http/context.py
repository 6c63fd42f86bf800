"""What the front needs from the rest of the service, handed to the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from ..actors.front_door import FrontDoorMessage
from ..actors.booking_intake import BookingIntake
from ..actors.channel_manager import ChannelManagerActor
from ..actors.property_actor import PropertyMessage
from ..actors.outbox import OutboxSender
from ..actors.webhook_sender import WebhookSender
from ..actors.push_scheduler import PushScheduler
from ..actors.reconciler import Reconciler
from ..channel.sandbox.state import SandboxState
from ..actors.property_writer import WriterMessage
from ..domain.addresses import TrustedProxies
from ..domain.budgets import Budgets
from ..engine import Clock, Mailbox, Registry
from ..storage.database import Database
from ..storage.key_directory import KeyDirectory


@dataclass(frozen=True, slots=True)
class FrontContext:
    db: Database
    keys: KeyDirectory
    clock: Clock
    budgets: Budgets
    proxies: TrustedProxies
    front_door: Mailbox[FrontDoorMessage]
    properties: Registry[int, PropertyMessage]
    writers: Registry[int, WriterMessage]
    pushes: PushScheduler
    reconciler: Reconciler
    outbox: OutboxSender
    webhooks: WebhookSender
    webhook_allow_private: bool
    intake: BookingIntake
    cm_notify_secret: str | None
    channel: ChannelManagerActor
    sandbox: SandboxState | None  # the in-process sandbox channel manager, when no real one is configured
    sandbox_url: str | None
    admin_token: str
    ask_timeout: float
