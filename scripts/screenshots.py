"""Screenshots of flinkish web's dashboard for the README, taken in headless Chromium.

    python scripts/screenshots.py http://127.0.0.1:8081 <JobID> [docs/images [tab ...]]

Writes dashboard-jobs.png (the job list) and dashboard-job-<tab>.png for each tab of the
job's page (its job graph among them; given tabs, only those, the Autoscaler tab only when
asked for), 1366 pixels wide (a laptop's screen), as tall as the page. Needs Debian's
chromium and chromium-driver and the 'test' extra (selenium). The README's pictures come
from a real job (Spark's rate source into a running count, with a savepoint taken; the
graph's from tests/fixtures/jobs/clicks_and_windows.py: a stream-stream join and a windowed
count, with a 2 s trigger), the Autoscaler tab's from the registry that
tests/web/test_autoscaler_tab.py writes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

TABS = ("overview", "graph", "checkpoints", "savepoints", "exceptions", "configuration")


def _shoot(driver: webdriver.Chrome, path: Path) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1366, max(600, min(int(height) + 140, 1800)))
    time.sleep(0.3)
    driver.save_screenshot(str(path))
    driver.set_window_size(1366, 860)


def main(url: str, job_id: str, out: Path, tabs: tuple[str, ...] = TABS) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1366,860"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    wait = WebDriverWait(driver, 30)
    out.mkdir(parents=True, exist_ok=True)
    try:
        if tabs == TABS:
            driver.get(url + "/#/overview")
            wait.until(
                ec.presence_of_element_located((By.CSS_SELECTOR, f"tr[data-jid='{job_id}']"))
            )
            _shoot(driver, out / "dashboard-jobs.png")
        for tab in tabs:
            driver.get(f"{url}/#/job/{job_id}/{tab}")
            wait.until(ec.text_to_be_present_in_element((By.ID, "refreshed"), "updated"))
            if tab in ("overview", "autoscaler"):
                wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".uplot")))
            if tab == "graph":
                wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "svg.graph")))
            time.sleep(0.5)  # let the charts paint; a picture, not a test
            _shoot(driver, out / f"dashboard-job-{tab}.png")
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = Path(sys.argv[3] if len(sys.argv) > 3 else "docs/images")
    main(sys.argv[1].rstrip("/"), sys.argv[2], out, tuple(sys.argv[4:]) or TABS)
