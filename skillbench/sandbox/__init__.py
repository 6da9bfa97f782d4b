"""Sandboxes: the protocol, the podman provider, the image, arm staging."""
