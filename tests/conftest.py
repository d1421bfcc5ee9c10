"""Suite-wide settings: every graph any test stages is typechecked as it is built."""
import os

os.environ.setdefault("EMBER_TYPECHECK", "1")
