"""Run the demo: start the demo site, crawl it with the example project for some
cycles, stop the site, write and summarise the report.

``python -m scrapy_fresh.demo.driver`` is what ``make demo`` runs. The pieces
(:class:`SiteProcess`, :func:`crawl`) are also used by ``bench/bandwidth.py`` and the
end-to-end test. Every crawl is a ``scrapy crawl`` subprocess in the project directory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CrawlRun", "SiteProcess", "crawl", "main"]

SPIDERS = ("news", "blog", "docs")


class SiteProcess:
    """``scrapy-fresh demo-site`` in a subprocess on a free port; a context manager.

    :param speed: simulated seconds per real second.
    :param seed: the site seed.
    :param start: simulated Unix time at start (default: now).
    :param crawl_delay: robots.txt Crawl-delay (seconds).
    """

    def __init__(
        self,
        *,
        speed: float = 60.0,
        seed: int = 1,
        start: float | None = None,
        crawl_delay: float = 0.05,
        timeout: float = 60.0,
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="fresh-demo-")
        ready = Path(self._dir.name) / "ready.json"
        command = [
            sys.executable,
            "-m",
            "scrapy_fresh.commands",
            "demo-site",
            "--port",
            "0",
            "--speed",
            str(speed),
            "--seed",
            str(seed),
            "--crawl-delay",
            str(crawl_delay),
            "--ready-file",
            str(ready),
        ]
        if start is not None:
            command += ["--start", repr(start)]
        self._log = open(Path(self._dir.name) / "site.log", "w+")  # noqa: SIM115
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the demo site did not start: {self.log()}")
            time.sleep(0.05)
        self.url: str = json.loads(ready.read_text())["url"]

    def log(self) -> str:
        self._log.flush()
        return (Path(self._dir.name) / "site.log").read_text()

    def _call(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def clock(self) -> float:
        return float(self._call("/_demo/clock")["now"])

    def advance(self, secs: float) -> float:
        return float(self._call(f"/_demo/advance?secs={secs!r}", method="POST")["now"])

    def truth(self) -> dict[str, Any]:
        data: dict[str, Any] = self._call("/_demo/truth")
        return data

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self._dir.cleanup()

    def __enter__(self) -> SiteProcess:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class CrawlRun:
    spider: str
    returncode: int
    log: str


def crawl(
    project: Path,
    spider: str,
    site_url: str,
    settings: Mapping[str, Any] | None = None,
    *,
    timeout: float = 600.0,
) -> CrawlRun:
    """Run ``scrapy crawl spider`` in ``project`` against the demo site at ``site_url``."""
    command = [
        sys.executable,
        "-m",
        "scrapy.cmdline",
        "crawl",
        spider,
        "-s",
        f"DEMO_SITE_URL={site_url}",
    ]
    for name, value in (settings or {}).items():
        text = value if isinstance(value, str) else json.dumps(value)
        command += ["-s", f"{name}={text}"]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    return CrawlRun(spider, result.returncode, result.stdout + result.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scrapy_fresh.demo.driver",
        description="Start the demo site, crawl it for some cycles, stop it, report.",
    )
    parser.add_argument("--project", type=Path, default=Path("example_project"))
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument(
        "--speed",
        type=float,
        default=3600.0,
        help="demo site speed (simulated seconds per real second)",
    )
    parser.add_argument(
        "--advance",
        type=float,
        default=0.0,
        help="also jump the site clock this many seconds after each cycle",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        help="directory for the store and the visit log (default: "
        "PROJECT/.scrapy/demo, emptied first)",
    )
    parser.add_argument("--report", type=Path, default=Path("demo-report.html"))
    parser.add_argument("--spiders", default=",".join(SPIDERS))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    project = args.project.resolve()
    if not (project / "scrapy.cfg").exists():
        print(f"--project {args.project}: no scrapy.cfg there", file=sys.stderr)
        return 2
    state = (args.state or project / ".scrapy" / "demo").resolve()
    if args.state is None and state.exists():
        for old in [*state.glob("*.sqlite*"), state / "visits.jsonl", state / "truth.json"]:
            old.unlink(missing_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    settings = {"FRESH_VISIT_LOG": str(state / "visits.jsonl"), "LOG_LEVEL": "INFO"}
    spiders = [s for s in args.spiders.split(",") if s]
    with SiteProcess(speed=args.speed, seed=args.seed) as site:
        print(
            f"Demo site {site.url} at {args.speed:g}x; {args.cycles} cycles of "
            f"{', '.join(spiders)}",
            flush=True,
        )
        start = site.clock()
        for cycle in range(1, args.cycles + 1):
            for spider in spiders:
                store = {"FRESH_SQLITE_PATH": str(state / f"{spider}.sqlite")}
                run = crawl(project, spider, site.url, {**settings, **store})
                if run.returncode != 0:
                    print(run.log[-4000:], file=sys.stderr)
                    print(f"scrapy crawl {spider} failed (exit {run.returncode})", file=sys.stderr)
                    return 1
            hours = (site.clock() - start) / 3600
            print(f"cycle {cycle}/{args.cycles} done, {hours:.1f} simulated hours in", flush=True)
            if args.advance:
                site.advance(args.advance)
        truth = site.truth()
    (state / "truth.json").write_text(json.dumps(truth))
    from scrapy_fresh.commands import main as fresh_main

    stores = [a for spider in spiders for a in ("--sqlite-path", str(state / f"{spider}.sqlite"))]
    return fresh_main(
        [
            "report",
            "--html",
            str(args.report),
            *stores,
            "--visit-log",
            str(state / "visits.jsonl"),
            "--site-truth",
            str(state / "truth.json"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
