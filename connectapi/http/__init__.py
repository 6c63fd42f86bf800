"""The HTTP front: app factory, gates, envelope, routes. Status codes live only here."""
