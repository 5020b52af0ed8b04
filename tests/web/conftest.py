"""A running checkpointed job with its REST address, and a headless Chromium (selenium).

The browser tests skip only when Chromium is absent *and* ``CI`` is unset: in CI (where
``make`` installs Debian's chromium and chromium-driver) a missing browser fails them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from tests.rest_client import Job

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.errors import JobCancelledError
from undertow.datastream import JobClient, StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource


def start_job(tmp: str, name: str, **settings: Any) -> JobClient:
    config: dict[str, Any] = {
        "execution.target": "local-threads",
        "rest.port": 0,
        "execution.checkpointing.interval": "300 ms",
        "execution.checkpointing.dir": tmp,
        "undertow.metrics.report-interval": "100 ms",
        # a checkpoint every 300 ms leaves a 10-entry history in 3 s: under load, before the
        # page fetched the details of a checkpoint a test clicked
        "web.checkpoints.history": 100,
    }
    config.update(settings)
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(config))
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda n, _: 1_700_000_000_000 + n
    )
    numbers = env.from_source(DataGeneratorSource(lambda i: i, count=None), strategy, "numbers")
    numbers.key_by(lambda n: n % 8).map(lambda n: n * 2).name("double").set_description(
        "doubles each number"
    ).filter(lambda n: n < 0).print()
    return env.execute_async(name)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    client = start_job(str(tmp_path_factory.mktemp("checkpoints")), "web test job")
    url = client.get_rest_address()
    assert url is not None
    try:
        yield Job(client, url)
    finally:
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    found = _chromium()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but chromium / chromedriver are missing (make installs them)")
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium "
                    "chromium-driver)")  # fmt: skip
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
