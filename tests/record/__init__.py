"""The storage layer against the embedded PostgreSQL: statements, leases, migrations, restore."""
