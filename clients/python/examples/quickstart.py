import datetime
import os

from connectapi_client import Client, ConflictError

client = Client(base_url=os.environ.get("CONNECTAPI_URL", "http://127.0.0.1:8080"),
                api_key=os.environ["CONNECTAPI_KEY"])

prop = client.property()
print(f"{prop.name}: a {prop.mode} key, money in {prop.currency}")
catalog = client.catalog()
plan = catalog.rate_plans[0]

# A rate for two nights a week from now. Retries, the wait after a 429 and the
# idempotency key that makes a retry safe are the client's business.
night = datetime.date.today() + datetime.timedelta(days=7)
written = client.rates.set([{"ratePlanId": plan.id, "dateFrom": night, "dateTo": night + datetime.timedelta(days=1),
                             "rate": "135.00", "currency": prop.currency}])
print(f"batch {written.batch_id}: {written.accepted_cells} cells accepted, {written.noop_cells} unchanged")
print("now:", client.batch(written.batch_id).status, "| requests left this minute:", client.rate_limit.remaining)

# A booking from the hotel's own site, then its cancellation.
booking = client.bookings.create({
    "externalReference": f"WEB-{night:%Y%m%d}-1",
    "checkIn": night, "checkOut": night + datetime.timedelta(days=2), "currency": prop.currency,
    "guest": {"name": "Ana Silva", "phone": "+351 912 345 678", "email": "ana@example.com"},
    "rooms": [{"roomTypeId": plan.room_type_id, "ratePlanId": plan.id, "adults": 2, "nightlyRate": "135.00"}],
})
print(f"booking {booking.booking_id} ({booking.reference}): {booking.status}, total {booking.total_amount}"
      + (" (a replay: it was made before)" if booking.replay else ""))
for listed in client.bookings.list(limit=20):
    print(" listed:", listed.booking_id, listed.external_reference, listed.status)
try:
    cancelled = client.bookings.cancel(booking.booking_id, "plans changed")
    print("cancelled at", cancelled.cancelled_at)
except ConflictError as refused:
    print("not cancelled:", refused.code)
