#!/usr/bin/python3
"""The live dashboard in headless Chromium against a running job (issue 20, point 4).

Starts `tidemark run --dashboard=127.0.0.1:0` on a paced job, opens the page in headless Chromium
through Selenium and chromedriver, and checks what a person would see: every operator of the job's
plan (as `tidemark plan` prints it) in the graph and in the table, and a rate that changes between
refreshes. Then it saves a screenshot (scripts/dev docs-plots copies it to docs/img/), ends the job
and sees the page say so. Missing Chromium, chromedriver or Selenium fail the test:
`scripts/dev setup` installs them.

usage: dashboard_test.py TIDEMARK_BIN SCREENSHOT_PNG
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

# Aion's average on tiered state, paced at 4000 events/s for up to 50 seconds (the test ends it
# sooner): late events and state in memory and on disk, besides rates and watermarks.
JOB = ["aion-average", "--state", "tiered", "--rate", "4000", "--events", "200000",
       "--events-per-window", "2000"]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def poll(what, condition, seconds):
    """Calls condition() until it returns something true; fails naming `what` at the deadline."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    fail(f"timed out after {seconds} s waiting for {what}")


def plan_operators(tidemark):
    """Operator names of the job's physical plan, from `tidemark plan` (independent of the page)."""
    text = subprocess.run([tidemark, "plan", *JOB], check=True, capture_output=True, text=True).stdout
    names = [m.group(1) for line in text.splitlines() if line.startswith("stage ")
             for m in re.finditer(r"([\w.:-]+) \((\w+)\)", line)]
    if not names:
        fail(f"no operator in the plan:\n{text}")
    return names


def start_job(tidemark, state_dir):
    """Starts the job with the dashboard on a free port; returns the process and the page's URL."""
    proc = subprocess.Popen([tidemark, "run", "--dashboard=127.0.0.1:0", "--data-dir", state_dir, *JOB],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = {}
    ready = threading.Event()

    def read_stderr():
        for line in proc.stderr:
            m = re.search(r"dashboard: (http://\S+)/", line)
            if m and not ready.is_set():
                found["url"] = m.group(1)
                ready.set()
        ready.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    if not ready.wait(30) or "url" not in found:
        proc.kill()
        fail("the job printed no 'dashboard: URL' line")
    return proc, found["url"]


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def open_browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        fail(f"python3-selenium is missing ({e}): run scripts/dev setup")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            fail(f"{path} is missing: run scripts/dev setup (chromium, chromium-driver)")
    # chromedriver and Chromium talk through "localhost": name the cause instead of a timeout
    try:
        socket.gethostbyname("localhost")
    except OSError as e:
        fail(f"'localhost' does not resolve on this machine ({e}; no /etc/hosts?): chromedriver "
             "and Chromium need it")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # CI runs as root, where Chromium's sandbox cannot start
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1500,1000", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    tidemark, screenshot = sys.argv[1], sys.argv[2]
    operators = plan_operators(tidemark)
    # the tiered state goes beside the screenshot, so that ending the job early leaves nothing behind
    state_dir = os.path.join(os.path.dirname(os.path.abspath(screenshot)), "dashboard-state")
    shutil.rmtree(state_dir, ignore_errors=True)
    proc, url = start_job(tidemark, state_dir)
    driver = None
    try:
        driver = open_browser()
        driver.set_page_load_timeout(30)
        driver.get(url)

        # the page redraws its graph and tables on every refresh, so each look is one script run
        # (element handles would go stale between two calls)
        def text(element_id):
            return driver.execute_script(f"return document.getElementById('{element_id}').innerText")

        def shown(selector):
            return set(driver.execute_script(
                f"return [...document.querySelectorAll('{selector}')].map(e => e.dataset.operator)"))

        poll("the page to show the job", lambda: text("job") == JOB[0], 20)
        for where, selector in (("graph", "#graph text[data-operator]"), ("table", "#operators tr[data-operator]")):
            missing = set(operators) - shown(selector)
            if missing:
                fail(f"operators of the plan missing from the {where}: {sorted(missing)}")
        print(f"the graph and the table show every operator: {', '.join(operators)}")

        # the sources' rate, as the page shows it (every digit), takes two different non-zero values
        seen = []

        def rate_changed():
            rate = text("events-per-s")
            if re.fullmatch(r"[1-9][0-9,]*", rate) and rate not in seen:
                seen.append(rate)
            return len(seen) >= 2
        poll("the events/s rate to change between refreshes", rate_changed, 20)
        print(f"events/s shown over refreshes: {seen}")
        status = text("status")
        if status != "running":
            fail(f"the page says '{status}', not that the job is running")

        # a view with rates in every stage for the screenshot (the first refreshes have none yet)
        poll("rates in the graph", lambda: driver.execute_script(
            "const r = [...document.querySelectorAll('#graph text.rate')];"
            "return r.length > 0 && r.every(e => !e.textContent.includes('–'))"), 10)
        os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
        # the whole page in one picture: a viewport as tall as the page
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1500, "height": height, "deviceScaleFactor": 1, "mobile": False})
        if not driver.save_screenshot(screenshot):
            fail(f"could not save the screenshot to {screenshot}")
        print(f"screenshot: {screenshot}")

        # end the job (and with it the server); the page says so and keeps its last view
        stop(proc)
        poll("the page to notice that the job ended", lambda: text("status") == "disconnected", 10)
        if text("job") != JOB[0]:
            fail("the page dropped its last view when the job ended")
    finally:
        if driver is not None:
            driver.quit()
        stop(proc)
        shutil.rmtree(state_dir, ignore_errors=True)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
