"""Compares two visit.mjs records (Inmanta 20.1's and ours) page by page: a markdown table of
what differs (text lines, links, API calls and their status codes) and the lines themselves.

    compare.py INMANTA.json OURS.json [--details]
Exit 0 when every page and action agrees, 1 otherwise."""

import json
import sys


def diff(theirs: list, ours: list) -> tuple[list, list]:
    return [x for x in theirs if x not in ours], [x for x in ours if x not in theirs]


def main() -> None:
    theirs, ours = (json.load(open(p)) for p in sys.argv[1:3])
    details = "--details" in sys.argv
    rows, notes = [], []
    for kind in ("pages", "actions"):
        for name in theirs[kind]:
            a, b = theirs[kind][name], ours[kind].get(name, {})
            cells = []
            for part in ("text", "links", "calls", "clicked", "after"):
                if part not in a:
                    continue
                only_theirs, only_ours = diff(a.get(part, []), b.get(part, []))
                cells.append("same" if not (only_theirs or only_ours) else f"-{len(only_theirs)} +{len(only_ours)}")
                for line in only_theirs:
                    notes.append(f"{name} {part} Inmanta only: {line}")
                for line in only_ours:
                    notes.append(f"{name} {part} ours only:    {line}")
            rows.append((kind[:-1], name, cells))
    print(f"auth: {theirs['auth']}\n")
    print("| page | text | links | API calls |\n| --- | --- | --- | --- |")
    for kind, name, cells in rows:
        if kind == "page":
            print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n| write action | API calls | controls used | text after |\n| --- | --- | --- | --- |")
    for kind, name, cells in rows:
        if kind == "action":
            print(f"| {name} | " + " | ".join(cells) + " |")
    if details and notes:
        print("\n" + "\n".join(notes))
    sys.exit(1 if notes else 0)


if __name__ == "__main__":
    main()
