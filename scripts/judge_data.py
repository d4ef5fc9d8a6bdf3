"""Add labelled pairs to the judge's data: ``scripts/judge_data.py add SPLIT WRITER FILE...``.

Each FILE is JSON Lines of ``{domain, a, b, label, phenomenon, why}`` (README "Contradiction
detection" says how to write them). Rows are checked (:func:`bench.judge_common.check_row`),
given ids (``<writer>-<n>``) and appended to ``bench/judgedata/<SPLIT>.jsonl``; a pair already
in any split (same two statements, case and spacing aside, either order) is skipped, so the
test split never leaks into training. ``stats`` prints the counts per split, label, phenomenon.
The test split is frozen: adding to it is refused unless ``--unfreeze`` is given (then
``bench/judgedata/FROZEN`` must be rewritten and the judge's test figures re-measured).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.judge_common import DATA, SPLITS, check_row, load_split, split_path  # noqa: E402
from bench.judge_common import pair_key as key  # noqa: E402


def add(split: str, writer: str, files: list[Path], unfreeze: bool) -> None:
    if split.startswith("test") and (DATA / "FROZEN").exists() and not unfreeze:
        sys.exit("the test split is frozen (bench/judgedata/FROZEN); see --unfreeze")
    seen = {key(r["a"], r["b"]) for s in SPLITS if split_path(s).exists() for r in load_split(s)}
    existing = load_split(split) if split_path(split).exists() else []
    number = sum(1 for r in existing if r["writer"] == writer)
    added, skipped, bad = [], 0, 0
    for file in files:
        for line_no, line in enumerate(file.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                print(f"{file}:{line_no}: not JSON", file=sys.stderr)
                bad += 1
                continue
            why = check_row(row) if isinstance(row, dict) else "not an object"
            if why is not None:
                print(f"{file}:{line_no}: {why}", file=sys.stderr)
                bad += 1
                continue
            k = key(row["a"], row["b"])
            if k in seen:
                skipped += 1
                continue
            seen.add(k)
            number += 1
            added.append(
                {
                    "id": f"{writer}-{number:04d}",
                    "split": split,
                    "writer": writer,
                    **{
                        f: " ".join(str(row[f]).split())
                        for f in ("domain", "a", "b", "label", "phenomenon")
                    },
                    "why": " ".join(str(row.get("why", "")).split()),
                }
            )
    DATA.mkdir(parents=True, exist_ok=True)
    with split_path(split).open("a") as out:
        for row in added:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{split}: +{len(added)} from {writer} ({skipped} duplicates skipped, {bad} malformed)")


def stats() -> None:
    for split in SPLITS:
        if not split_path(split).exists():
            continue
        rows = load_split(split)
        print(
            f"{split}: {len(rows)} pairs, {len({r['writer'] for r in rows})} writers, "
            f"{len({r['domain'] for r in rows})} domains, "
            f"sha256 {hashlib.sha256(split_path(split).read_bytes()).hexdigest()[:12]}"
        )
        print("  labels:", dict(sorted(Counter(r["label"] for r in rows).items())))
        print("  phenomena:", dict(sorted(Counter(r["phenomenon"] for r in rows).items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add", help="append checked pairs to a split")
    a.add_argument("split", choices=SPLITS)
    a.add_argument("writer", help="who wrote them (ids are <writer>-<n>)")
    a.add_argument("files", nargs="+", type=Path)
    a.add_argument("--unfreeze", action="store_true")
    sub.add_parser("stats", help="counts per split, label and phenomenon")
    args = parser.parse_args()
    if args.command == "add":
        add(args.split, args.writer, args.files, args.unfreeze)
    else:
        stats()


if __name__ == "__main__":
    main()
