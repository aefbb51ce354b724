"""The multidevice/ folder runs only inside its own process (see test_multidevice.py)."""

import os

collect_ignore = [] if os.environ.get("FJAX_MULTIDEVICE") else ["multidevice"]
