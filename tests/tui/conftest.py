import asyncio
import inspect
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests in a fresh event loop (no asyncio plugin needed)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        kwargs = {name: pyfuncitem.funcargs[name] for name in names}
        asyncio.run(pyfuncitem.obj(**kwargs))
        return True
    return None


@pytest.fixture(scope="session")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A golden pair from the simulator, made once: (dump directory of a run with
    ``layer1/conv2`` perturbed, dump directory of the clean run)."""
    from goldenpair import golden_pair

    return golden_pair(tmp_path_factory.mktemp("golden"))
