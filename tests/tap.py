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
