"""The podman provider (provider.py) and its parts: the podman service and the connection to
it (service.py, connection.py, tunnel.py, reach.py), how files reach a sandbox (channel.py),
the sandbox, pod and workspace the provider makes (container.py, pod.py, workspace.py), which
know it by host.py's shape; and its images (images.py, the Images contract, over image.py,
variants.py, case_image.py, pull.py, imageload.py), `skillbench doctor`'s checks (doctor.py)."""
