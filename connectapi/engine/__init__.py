"""The actor runtime: what actors and the front use; the rest stays private."""

from ._actor import Actor as Actor
from ._clock import Clock as Clock
from ._clock import FakeClock as FakeClock
from ._clock import SystemClock as SystemClock
from ._errors import ActorCrashed as ActorCrashed
from ._errors import ActorError as ActorError
from ._errors import ActorUnavailable as ActorUnavailable
from ._errors import AskTimeout as AskTimeout
from ._mailbox import Mailbox as Mailbox
from ._messages import Ask as Ask
from ._messages import Wake as Wake
from ._registry import Registry as Registry
from ._rounds import NextRound as NextRound
from ._rounds import RoundsActor as RoundsActor
from ._supervisor import Down as Down
from ._supervisor import RestartPolicy as RestartPolicy
from ._supervisor import Supervisor as Supervisor
from ._supervisor import open_supervisor as open_supervisor

__all__ = [
    "Actor",
    "ActorCrashed",
    "ActorError",
    "ActorUnavailable",
    "Ask",
    "AskTimeout",
    "Clock",
    "Down",
    "FakeClock",
    "Mailbox",
    "NextRound",
    "Registry",
    "RestartPolicy",
    "RoundsActor",
    "Supervisor",
    "SystemClock",
    "Wake",
    "open_supervisor",
]
