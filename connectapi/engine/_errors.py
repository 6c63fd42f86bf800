"""Failures of the actor runtime itself, told apart from the refusals actors send back."""

from __future__ import annotations


class ActorError(Exception):
    """Base of the runtime's own failures."""


class ActorUnavailable(ActorError):
    """The actor is stopped or has given up after too many crashes."""


class AskTimeout(ActorError):
    """No reply within the ask's deadline; the message may or may not have been handled."""


class ActorCrashed(ActorError):
    """The actor raised while handling this message; the original error is the __cause__."""
