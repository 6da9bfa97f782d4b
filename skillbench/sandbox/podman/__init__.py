"""The podman provider (provider.py) and its parts: the podman service and the connection to
it (service.py, connection.py, tunnel.py, reach.py), how files reach a sandbox (channel.py),
images loaded into a remote service (imageload.py), and the sandbox, pod and workspace the
provider makes (container.py, pod.py, workspace.py), which know it by host.py's shape."""
