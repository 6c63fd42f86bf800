"""Where a property's calls to the channel manager go: a live property's to the channel
manager (the configured one, or the sandbox when none is), a test twin's to the test
sandbox of this process, never to the configured one (docs/decisions/0115-test-mode-twins.md)."""

from __future__ import annotations

from dataclasses import dataclass

from ..channel.sandbox.state import SandboxState
from ..engine import Mailbox
from ..storage.properties import ChannelIds
from .messages.channel_manager import ChannelMessage, Mode


@dataclass(frozen=True, slots=True)
class ChannelRoutes:
    live: Mailbox[ChannelMessage]
    test: Mailbox[ChannelMessage]
    test_sandbox: SandboxState

    def for_push(self, ids: ChannelIds) -> tuple[Mailbox[ChannelMessage], Mode]:
        """The channel-manager actor for a push of the property `ids` are of, and its mode. A
        test twin's ids (its live property's) are made known to the test sandbox first: any
        process's test sandbox takes any twin, also after a restart."""
        if ids.mode == "live":
            return self.live, "live"
        if ids.property_id is not None:
            self.test_sandbox.adopt(ids.property_id, ids.currency, ids.timezone, ids.room_types.values(),
                                    ids.rate_plans.values(),
                                    {ids.rate_plans[plan]: each for plan, each in ids.occupancies.items()})
        return self.test, "test"
