"""Supervised actors: the channel manager, each property's writer and pushers, and the rounds that send, pull and tidy."""
