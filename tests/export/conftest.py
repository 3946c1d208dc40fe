import sys
from pathlib import Path

# timelines.py and demo_session.py live next to the tests.
sys.path.insert(0, str(Path(__file__).parent))
