"""What the operator's admin API (admin/) and the owner's console (console/) both do to a
property, written once so both answer alike: neither audience owns it, so it lives in
neither. Who may act on which property is the caller's to check (the operator token
reaches every property; an owner, the properties they own).

- key_actions.py: create, list, change, rotate and revoke API keys; their allowlist refusals.
- webhook_endpoints.py: register, pause, resume, test, rotate, redeliver, recover.
- property_actions.py: check-in, applying a kept OTA revision again, the property's settings.
- held_grid.py: what the channel manager holds over a range of nights (admin's channel
  grid, the console's grid), through channel_calls.py, which waits (bounded) for the
  channel manager's budget.
"""
