"""Supervised actors: the front door, one PropertyActor per property, and (later) the pushers."""
