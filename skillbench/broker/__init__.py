"""The model broker (docs/trust.md): how an agent CLI inside a sandbox reaches its model.
server.py is the broker itself, over wire.py (what differs between providers' APIs),
billing.py (what a forwarded call is billed) and limits.py (the limits on one request)."""
