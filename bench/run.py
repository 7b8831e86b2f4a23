"""`make bench`: every benchmark, one after the other, then one table of all their rows.

    .venv/bin/python bench/run.py [--full] [--only send,inbox]

Each script measures its own baseline in the same run (see bench/README.md) and appends its rows
(path, ours, baseline, unit, ratio, target) to a shared JSON-lines file; this prints them together,
writes bench/results/bench-<UTC time>.json and .md, and exits 1 when a script failed or a row
missed its target. Scripts run with --quick unless --full is given; each one's output is kept in
bench/results/logs/<name>-<UTC time>.log.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from support import PYTHON, ROOT, git_commit, load_average, log, rows_table

# In the order of issue 18's points; the older benchmarks last.
SCRIPTS = ["send", "dispatch", "webhooks", "inbound", "scanning", "inbox", "scale", "campaigns", "tls_allowed", "dav"]


def run_script(name: str, rows_file: Path, full: bool, logs: Path, stamp: str) -> tuple[int, float]:
    """Run bench/<name>.py; its output goes to a log file, and its last lines to the terminal."""
    command = [PYTHON, str(ROOT / "bench" / f"{name}.py"), "--rows-file", str(rows_file)]
    if not full:
        command.append("--quick")
    log_path = logs / f"{name}-{stamp}.log"
    started = time.perf_counter()
    with log_path.open("w") as out:
        status = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - started
    if status:
        print("".join(log_path.read_text().splitlines(keepends=True)[-25:]), end="")
    log(f"{name}: exit {status} after {seconds:.0f} s (output in {log_path.relative_to(ROOT)})")
    return status, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="each script's default (longer) settings")
    parser.add_argument("--only", help="comma-separated script names, e.g. send,inbox")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else SCRIPTS
    unknown = [name for name in names if name not in SCRIPTS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(SCRIPTS)}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results_dir = ROOT / "bench" / "results"
    logs = results_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    load_at_start = load_average()
    failed_scripts, seconds = [], {}
    with tempfile.TemporaryDirectory() as temp:
        rows_file = Path(temp) / "rows.jsonl"
        rows_file.touch()
        for name in names:
            log(f"{name}: running")
            status, seconds[name] = run_script(name, rows_file, args.full, logs, stamp)
            if status:
                failed_scripts.append(name)
        rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    table = rows_table(rows) if rows else "(no rows)"
    missed = [one["path"] for one in rows if one["passed"] is False]
    summary = (f"{len(rows)} rows, {sum(one['passed'] is True for one in rows)} pass, {len(missed)} fail"
               + (f"; scripts that failed: {', '.join(failed_scripts)}" if failed_scripts else ""))
    print(f"\n{table}\n\n{summary}; load average {load_at_start} at start, {load_average()} at end")
    record = {"benchmark": "all", "timestamp": stamp, "commit": git_commit(), "quick": not args.full,
              "load_average_at_start": load_at_start, "load_average_at_end": load_average(),
              "script_seconds": {name: round(value, 1) for name, value in seconds.items()},
              "failed_scripts": failed_scripts, "rows": rows}
    (results_dir / f"bench-{stamp}.json").write_text(json.dumps(record, indent=2) + "\n")
    (results_dir / f"bench-{stamp}.md").write_text(f"```\n{table}\n```\n\n{summary}\n")
    print(f"table written to bench/results/bench-{stamp}.md")
    return 1 if failed_scripts or missed else 0


if __name__ == "__main__":
    sys.exit(main())
