"""The programs that run inside a sandbox, copied in and run by the image's python3: the
executor (its PID 1), the workspace handover before the checks, the port relay. Standard
library only; the host never imports them except to find their files."""
