"""The Connect API, for integrators (PMSs, booking engines): the contract's routes under
/api/v1/connect-api/v1 and what only they use.

- Routes: property.py (GET /property, /catalog), ari.py (availability, rates,
  restrictions), batches.py, sync.py, bookings.py.
- gates.py: the contract's gates, run before any of these routes (app.py). Its address
  gates (`admit`, `refuse_auth`, `authenticated`: the `ip`, `global` and `ip-auth`
  budgets) are also the admin API's operator token's and public/'s, which the contract's
  budgets hold too: they import them from here.
- idempotent.py: `x-idempotency-key` for the write routes.

The contract's answer shapes are written here, not borrowed from the admin API's views.
"""
