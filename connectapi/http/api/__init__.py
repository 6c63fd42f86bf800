"""Connect API routes, one module per resource."""
