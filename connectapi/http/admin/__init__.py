"""The operator's admin API (ADMIN-API.md) under /api/v1/admin, behind the operator token
(token.py, run by app.py before every admin route), and /metrics.

- properties.py: properties, their catalog, channel mapping and API keys.
- bookings.py: a property's e-mails, check-in, and the OTA revisions the channel manager sent.
- channel.py: what the channel manager holds, and the sandbox's stats, faults and OTA bookings.
- webhooks.py: webhook endpoints and their deliveries.
- owners.py: the owners who log in to the console.
- actors.py: the service's actors that are down, and starting one again.
- metrics.py: GET /metrics (Prometheus), with the record's gauges.
- views.py: how records are shown in admin answers.

What the owner's console does too (keys, webhook endpoints, settings, check-in, the held
grid) is in shared/, written once for both.
"""
