"""Recorded expectations: the files, their schema, drift between torch versions, atomic writes.

May import: ``spec/`` only (and the standard library).
"""
