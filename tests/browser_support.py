"""A headless Chromium posing as a phone, driven through chromedriver (selenium), that reads the
terminal of textual-serve's page as the operator would see it.

The page draws its terminal on a canvas (xterm.js with its WebGL or canvas renderer): the text is
nowhere in the DOM. The page keeps its xterm.js Terminal in a closure, as `this.terminal` of the
object that drives it, so a script run before the page's own catches that Terminal when it is
assigned and keeps it where the test can read its screen buffer: the rows xterm.js draws.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVER = "chromedriver"
# A common phone: 412 CSS pixels wide, as a Pixel 7 or a Galaxy S2x is.
PHONE = {"width": 412, "height": 915, "pixelRatio": 2.625, "touch": True, "mobile": True}

CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    (window.svcTerminals = window.svcTerminals || []).push(value);
    Object.defineProperty(this, "terminal", {
      value: value, writable: true, configurable: true, enumerable: true,
    });
  },
});
"""

READ_SCREEN = """
const terminal = (window.svcTerminals || [])[0];
if (!terminal || !terminal.buffer) return null;
const buffer = terminal.buffer.active;
const rows = [];
for (let y = 0; y < terminal.rows; y++) {
  const line = buffer.getLine(buffer.viewportY + y);
  rows.push(line ? line.translateToString(true) : "");
}
return rows.join("\\n");
"""


def find_chromium() -> tuple[str, str] | str:
    """(the browser, its driver), or why there is none: the test skips then."""
    browser = next(filter(None, map(shutil.which, BROWSERS)), None)
    driver = shutil.which(DRIVER)
    if browser is None or driver is None:
        missing = " and ".join(
            name
            for name, found in (("Chromium", browser), ("chromedriver", driver))
            if found is None
        )
        return (
            f"no {missing} on this machine (Debian: apt-get install chromium chromium-driver);"
            " the web console's browser test needs a real browser"
        )
    return browser, driver


def wait_until(
    condition: Callable[[], object], what: str, timeout: float, said: Callable[[], str]
) -> object:
    """Poll `condition` until it is truthy; past the deadline, fail saying `what` and `said()`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s\n{said()}")
        time.sleep(0.1)


class Phone:
    """Chromium, headless, with a phone's screen and touch."""

    def __init__(self, browser: str, driver: str):
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        options.add_argument("--headless=new")
        # /dev/shm is small in containers; Chromium's renderer crashes when it runs out.
        options.add_argument("--disable-dev-shm-usage")
        if os.geteuid() == 0:
            # Chromium refuses to run as root inside its own sandbox.
            options.add_argument("--no-sandbox")
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": PHONE})
        # The system's driver, named: selenium would otherwise look for (and fetch) one itself.
        self.driver = webdriver.Chrome(options=options, service=Service(driver))
        self.driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": CATCH_TERMINAL}
        )

    def close(self) -> None:
        self.driver.quit()

    def open(self, address: str) -> None:
        self.driver.get(address)

    def page_text(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "body").text

    def log_in(self, token: str) -> None:
        """Type the token in the login form and send it, as the operator does the first time."""
        self.driver.find_element(By.NAME, "token").send_keys(token)
        self.driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    def screen(self) -> str:
        """The terminal's rows as the page draws them ("" before the page has a terminal)."""
        return self.driver.execute_script(READ_SCREEN) or ""

    def wait_for_screen(self, *texts: str, timeout: float = 90) -> str:
        """The screen, once every one of `texts` is on it."""
        return wait_until(
            lambda: (shown := self.screen()) and all(text in shown for text in texts) and shown,
            f"the terminal in the page to show {texts}",
            timeout,
            lambda: f"the page's terminal shows:\n{self.screen()}",
        )

    def widths(self) -> tuple[float, float]:
        """(the terminal's width, the screen's) in CSS pixels: a terminal wider than the screen
        is a page laid out for a desktop window, shrunk or cut on the phone."""
        return tuple(
            self.driver.execute_script(
                "const box = document.querySelector('.xterm-screen').getBoundingClientRect();"
                " return [box.width, screen.width];"
            )
        )

    def _keyboard(self) -> WebElement:
        # xterm.js reads keys from a hidden textarea, where a phone's on-screen keyboard types.
        return self.driver.find_element(By.CSS_SELECTOR, "textarea.xterm-helper-textarea")

    def tap_terminal(self) -> None:
        """Focus the terminal, as a tap on it does (without a click the console would act on):
        the page tells the console, which shows its key hints only while it has the focus."""
        self.driver.execute_script("arguments[0].focus();", self._keyboard())

    def type(self, keys: str) -> None:
        self._keyboard().send_keys(keys)
