#!/usr/bin/env python3
"""Adds up JUnit-style XML reports (lit's xunit, GoogleTest's xml) and prints
`N passed, N failed`; exits 1 if anything failed or no test ran."""

import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("skipped") is not None or case.get("status") == "notrun":
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
    return passed, failed


def main(paths):
    passed = failed = 0
    for path in paths:
        try:
            p, f = count(path)
        except (OSError, ET.ParseError) as err:
            print(f"cannot read test report {path}: {err}")
            p, f = 0, 1
        print(f"{path}: {p} passed, {f} failed")
        passed += p
        failed += f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
