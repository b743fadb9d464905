"""The web chat `xlacel serve` answers GET / with, driven in a real browser (Debian's headless
chromium through its chromedriver, with selenium) against the default model: the page names the
model and its context, a typed message (non-ASCII) streams back the same greedy text the API
gives for the same conversation (system prompt included), Regenerate gives it again in place of
the last reply, Stop ends a long reply and the server stays healthy, and the page's markdown
renderer escapes what the model writes. The page loads nothing from elsewhere (no CDN). Set
XLACEL_WEB_CHAT_SCREENSHOT to a .png path to keep a screenshot."""
import os
import re
import shutil
import sys
import unittest

import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
MESSAGE = "Name three sights of Zürich ☃"


@unittest.skipUnless(CHROMIUM and CHROMEDRIVER,
                     "needs Debian's chromium and chromium-driver (scripts/setup --tests)")
class WebChatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        cls.server = ServerProcess(XLACEL, "--parallel", "4", "--context", "1024")
        cls.api = openai.OpenAI(base_url=cls.server.base_url, api_key="unused", max_retries=0,
                                timeout=600)
        cls.model = cls.api.models.list().data[0].id
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", "--window-size=1100,800"):
            options.add_argument(argument)
        cls.browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        cls.url = f"http://127.0.0.1:{cls.server.port}/"

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def find(self, css):
        from selenium.webdriver.common.by import By
        return self.browser.find_elements(By.CSS_SELECTOR, css)

    def wait(self, condition, seconds=300):
        from selenium.webdriver.support.ui import WebDriverWait
        return WebDriverWait(self.browser, seconds).until(lambda _: condition())

    def open_page(self, temperature="0", max_tokens="24", system=""):
        self.browser.get(self.url)
        self.browser.execute_script("localStorage.clear()")
        self.browser.get(self.url)
        self.wait(lambda: self.find("#model")[0].text not in ("", "…"))
        self.find("details.settings summary")[0].click()
        for field, value in (("temperature", temperature), ("max_tokens", max_tokens),
                             ("system", system)):
            element = self.find("#" + field)[0]
            element.clear()
            if value:
                element.send_keys(value)

    def send(self, text):
        self.find("#input")[0].send_keys(text)
        self.find("#send")[0].click()

    def last_reply(self, states=("done",)):
        """The last assistant message's state and raw text, once in one of `states`."""
        def ended():
            replies = self.find(".message.assistant")
            return replies and replies[-1].get_attribute("data-state") in states
        self.wait(ended)
        return self.browser.execute_script(
            "const r = [...document.querySelectorAll('.message.assistant')].pop();"
            "return [r.dataset.state, r.dataset.raw];")

    def api_reply(self, messages, max_tokens=24):
        return self.api.chat.completions.create(model=self.model, messages=messages,
                                                temperature=0,
                                                max_tokens=max_tokens).choices[0].message.content

    def test_the_page_is_whole(self):
        status, page = self.server.request("GET", "/")
        self.assertEqual(status, 200)
        self.assertIn("<title>xlacel chat</title>", page)
        self.assertEqual(re.findall(r"(?:src|href)=\"https?:", page), [])

    def test_a_message_streams_the_greedy_reply_and_regenerates_it(self):
        self.open_page(system="You are a travel guide.")
        self.assertEqual(self.find("#model")[0].text, self.model)
        self.assertEqual(self.find("#context")[0].text, "1024")
        self.send(MESSAGE)
        state, text = self.last_reply()
        expected = self.api_reply([{"role": "system", "content": "You are a travel guide."},
                                   {"role": "user", "content": MESSAGE}])
        self.assertEqual((state, text), ("done", expected))
        self.assertIn("24 tokens", self.find(".message.assistant .stats")[0].text)
        # The click replaces the reply with a new, streaming one before it returns.
        self.find("#regenerate")[0].click()
        self.assertEqual(self.last_reply(), ["done", expected])
        self.assertEqual(len(self.find(".message.assistant")), 1)
        if os.environ.get("XLACEL_WEB_CHAT_SCREENSHOT"):
            self.browser.save_screenshot(os.environ["XLACEL_WEB_CHAT_SCREENSHOT"])

    def test_stop_ends_a_long_reply(self):
        from selenium.common.exceptions import ElementNotInteractableException
        self.open_page(temperature="0.8", max_tokens="900")
        # A sampled story may end (and Stop hide) before the click: then ask again.
        for attempt in range(5):
            self.send("Tell me a very long story.")
            self.wait(lambda: self.find(".message.assistant") and self.find(
                ".message.assistant")[-1].get_attribute("data-raw"))
            try:
                self.find("#stop")[0].click()
                break
            except ElementNotInteractableException:
                self.assertEqual(self.last_reply()[0], "done", f"attempt {attempt}")
        else:
            self.fail("every story ended before Stop could be clicked")
        state, text = self.last_reply(states=("stopped", "done"))
        self.assertEqual(state, "stopped")
        self.assertTrue(text)
        self.wait(lambda: any("cancelled" in line for line in self.server.log_lines), 60)
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_markdown_is_rendered_and_escaped(self):
        self.open_page()
        html = self.browser.execute_script("return renderMarkdown(arguments[0]);",
                                           "# Title\nSome **bold** and `x < y`.\n\n- one\n- two\n\n"
                                           "```html\n<script>alert(1)</script>\n```")
        self.assertEqual(html, "<h1>Title</h1><p>Some <strong>bold</strong> and "
                               "<code>x &lt; y</code>.</p><ul><li>one</li><li>two</li></ul>"
                               "<pre><code class=\"language-html\">&lt;script&gt;alert(1)"
                               "&lt;/script&gt;</code></pre>")


if __name__ == "__main__":
    unittest.main()
