"""Helpers every page shares. May import: services, Qt. No page room, no shell."""
