import sys
from pathlib import Path

# timelines.py and demo_session.py live next to the tests; demo_session uses the
# replay tests' session helpers.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "replay"))
