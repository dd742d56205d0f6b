#!/usr/bin/env python3
"""Sort the failures of the conformance test on random models into known kinds.

    explain_disagreements.py REPORT

REPORT is what `cargo run -p compiler --bin conformance -- DIR` printed for the random models
(scripts/reference/random_check.sh). Every failing model is put under the known disagreement it
shows (each has a minimal case in compiler/tests/cases-open, named below) or listed as
UNEXPLAINED; the exit code is 1 when any model is unexplained.
"""

import json
import re
import sys
from collections import Counter

# kind -> the minimal case that records it
KINDS = {
    "string() of a bool is true/false in Inmanta": "g_rand_string_cast_false",
    "std::json_dumps keeps the dict's key order in Inmanta": "g_rand_json_dumps_keeps_key_order",
    "an integral float in an f-string formats as 1 (and -0.0 as 0) in Inmanta": "g_rand_fstring_integral_float",
    "test harness: serde_json parses the expected float 1 ulp off (not a compiler difference)": None,
}
STRING_BOOL, JSON_ORDER, FSTRING_FLOAT, FLOAT_PARSE = KINDS

# Models read by hand where a known difference propagates into values the rules above cannot
# recognise (random_models.py --seed N reproduces each).
CHECKED_BY_HAND = {
    # v5 = f"{v4}" with v4 = 1000.0 is "1000" in Inmanta; v6 = std::length(v5) and v21 follow it
    "rand_2950": FSTRING_FLOAT,
    # v4 = std::length(f"{v2}") with v2 = 1.0: 1 in Inmanta, so a0_1 > 1 selects fewer implementations
    "rand_4363": FSTRING_FLOAT,
}


def integral_float_text(ours):
    """Our text with integral floats written the way Inmanta's f-strings write them."""
    return re.sub(r"(-?\d+)\.0\b", r"\1", ours).replace("-0", "0")


def explain_strings(expected, ours):
    if expected in ("true", "false") and ours == expected.capitalize():
        return STRING_BOOL
    try:
        e, o = json.loads(expected), json.loads(ours)
        if isinstance(e, dict) and e == o:
            return JSON_ORDER
    except ValueError:
        pass
    if integral_float_text(ours) == expected:
        return FSTRING_FLOAT
    return None


def explain(line):
    m = re.match(r"Variable: \S+: Inmanta (.*), we Some\((\w+)\((.*)\)\)$", line) or re.match(
        r"Variable: \S+: Inmanta (.*), we Some\((Object|Array) (.*)\)$", line
    )
    if m:
        expected, kind, ours = m.groups()
        if kind == "Number":
            try:
                e, o = float(expected), float(ours)
                if abs(e - o) <= 1e-12 * max(1.0, abs(e)):
                    return FLOAT_PARSE
            except ValueError:
                return None
        if kind == "String":
            return explain_strings(json.loads(expected), json.loads(ours))
        if kind == "Array":
            want = json.loads(expected)
            got = re.findall(r'String\("((?:[^"\\]|\\.)*)"\)', ours)
            if len(want) == len(got) and all(isinstance(w, str) and explain_strings(w, g) for w, g in zip(want, got)):
                return FSTRING_FLOAT
        if kind == "Object":
            want = json.loads(expected)
            got = dict(re.findall(r'"((?:[^"\\]|\\.)*)": String\("((?:[^"\\]|\\.)*)"\)', ours))
            diff = [k for k, w in want.items() if isinstance(w, str) and k in got and got[k] != w]
            if diff and all(explain_strings(want[k], got[k]) for k in diff):
                return explain_strings(want[diff[0]], got[diff[0]])
        return None
    m = re.match(r"ResourceAttribute: \S+ \S+: Inmanta (\".*\"), we (\".*\")$", line)
    if m:
        return explain_strings(json.loads(m.group(1)), json.loads(m.group(2)))
    return None


def main():
    text = open(sys.argv[1]).read()
    total = re.search(r"(\d+) of (\d+) cases disagree", text)
    per_kind = Counter()
    unexplained = []
    for block in re.split(r"^=== ", text, flags=re.M)[1:]:
        path, *lines = block.split("\n")
        seed = re.sub(r"^.*?(rand_\d+)\.cf$", r"\1", path.strip())
        if seed in CHECKED_BY_HAND:
            per_kind[CHECKED_BY_HAND[seed]] += 1
            continue
        kinds = set()
        for line in lines:
            if not line.strip() or re.match(r"^\d+ of \d+ cases|^  \w+: \d+ cases", line):
                continue
            kind = explain(line.strip())
            if kind:
                kinds.add(kind)
            else:
                unexplained.append(f"{seed}: {line[:300]}")
                kinds.add("UNEXPLAINED")
        for k in kinds:
            per_kind[k] += 1
    if total:
        print(f"{total.group(2)} models, {total.group(1)} differ from Inmanta")
    elif "0 of" not in text and "cases disagree" not in text:
        print("no report found")
        sys.exit(2)
    for kind, n in per_kind.most_common():
        case = KINDS.get(kind)
        print(f"{n:6d}  {kind}" + (f"  (case {case})" if case else ""))
    for u in unexplained:
        print("UNEXPLAINED", u)
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
