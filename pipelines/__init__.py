"""Runnable jobs, thin over the library; each is also a `keras-bert` subcommand."""
