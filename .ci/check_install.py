"""Check that an installed hlsfuse carries every file of the repository's templates/ and hw/.

Run with the installed interpreter from outside the repository (`make install-check` does):
    python .ci/check_install.py REPO
"""

import sys
from pathlib import Path

from hlsfuse.resources import hw_dir, templates_dir


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def main() -> int:
    repo = Path(sys.argv[1]).resolve()
    for name, installed in (("templates", templates_dir()), ("hw", hw_dir())):
        if repo in installed.resolve().parents:
            print(f"{name}: found in the repository ({installed}), not in the installed package")
            return 1
        missing = sorted(set(files(repo / name)) - set(files(installed)))
        if missing:
            print(f"{name}: the installed package lacks {', '.join(missing)}")
            return 1
        print(f"{name}: all {len(files(repo / name))} files installed in {installed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
