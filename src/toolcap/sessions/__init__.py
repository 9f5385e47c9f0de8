"""Saved conversations: finding tool outputs in session files and splicing bounded ones.

Used by ``toolcap repair``; message shapes are read through :mod:`toolcap.adapters`.
"""
