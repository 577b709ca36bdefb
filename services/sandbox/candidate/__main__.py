"""``python -m services.sandbox.candidate``: a candidate's process (the server starts it)."""

from services.sandbox.candidate.harness import main

main()
