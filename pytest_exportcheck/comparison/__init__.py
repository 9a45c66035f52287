"""How two values are compared: tolerance policies and value differences.

Used by the eager side (is eager deterministic?), the checks (parity, mutation) and
the Python API alike, so it sits low: it imports torch and nothing of the plugin's
but itself.
"""
