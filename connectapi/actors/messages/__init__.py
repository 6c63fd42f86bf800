"""Each actor's protocol, one module per actor: its messages (frozen dataclasses; an ask
names its reply type) and the union its mailbox takes."""
