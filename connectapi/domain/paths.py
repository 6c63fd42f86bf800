"""Where the service's interfaces live; shared by the front and the answers that name paths."""

CONNECT_PREFIX = "/api/v1/connect-api/v1"
ADMIN_PREFIX = "/api/v1/admin"
