"""Behaviour measured from an attempt's steps: tools, turns, action patterns, search."""
