"""Connect API service for hotels."""
