"""TAP output for the Python tests (tests/run-tests.sh reads it)."""


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, name), flush=True)
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            if detail:
                for line in str(detail).splitlines():
                    print("#   " + line, flush=True)
        return cond

    def done(self):
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed else 0


def in_tempdir(prefix, check):
    """check(d) in a fresh temporary directory d, removed afterwards; its return value."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix=prefix)
    try:
        return check(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
