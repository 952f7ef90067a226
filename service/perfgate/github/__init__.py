"""The GitHub boundary (github3.py): sticky PR comment, commit status, check run, event payloads."""
