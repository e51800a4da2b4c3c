"""Open a run's report.html in headless Chromium: check that its tables and plots render,
and save a screenshot.

    apt-get install -y chromium   # once
    .venv/bin/python benchmarks/screenshot_report.py runs/demo [--out docs/report-screenshot.png]
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("run")
ap.add_argument("--out", default="report-screenshot.png")
a = ap.parse_args()
html = (Path(a.run) / "eval" / "report.html").resolve()
browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
if not browser:
    sys.exit("no Chromium found: apt-get install -y chromium")
flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
with tempfile.TemporaryDirectory() as profile:
    dom = subprocess.run([browser, *flags, f"--user-data-dir={profile}", "--dump-dom", html.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    subprocess.run([browser, *flags, f"--user-data-dir={profile}", f"--screenshot={Path(a.out).resolve()}",
                    "--window-size=1400,1800", html.as_uri()], capture_output=True, timeout=120, check=True)
checks = {
    "results table": '<table class="summary">' in dom,
    "per-probe table": '<table class="probes">' in dom,
    "two embedded plots": dom.count('src="data:image/png;base64,') == 2,
    "verdicts": "What the numbers say" in dom,
}
for name, ok in checks.items():
    print(f"{'ok  ' if ok else 'FAIL'} {name}")
print(f"screenshot: {a.out}")
sys.exit(0 if all(checks.values()) else 1)
