"""``python -m services.sandbox.judge``: the judge process (the server starts it)."""

from services.sandbox.judge.process import main

main()
