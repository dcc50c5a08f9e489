"""The `skilleval` console script."""


def main() -> int:
    return 0
