"""Serving the app with hypercorn, the one place that knows it.

- server.py: hypercorn's configuration, binding a socket before anything starts, and
  serving until told to stop (then finishing what is in flight within a bound).
- connections.py: the connection guard (caps on connections, the read deadline, lingering
  close, HTTP/1.1 only). The one module that touches hypercorn's private hooks: it checks
  at start that the installed hypercorn is the one it was written for.
- sends.py: the one bounded-send policy: how long a send of an answer may take, and one
  second for each once the service stops; used by server.py's ASGI layer and by the guard's
  socket writes alike.
"""
