"""Simulated brokers: the broker agent's real registration, session and control-plane handling
(``control_state``, ``control_servicer``) without logs or a data plane, many per OS process.

Used by the scale benchmark (``python -m bench scale``) to drive the controller with a fleet of
hundreds of brokers on one machine; every figure it gives is labelled "simulation".
"""
