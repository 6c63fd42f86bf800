"""The record: PostgreSQL through asyncpg, driven from Trio by trio-asyncio.

Everything outside this package calls trio-native functions; asyncpg and asyncio stay here.
"""
