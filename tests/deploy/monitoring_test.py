"""deploy/monitoring's PrometheusRule, rendered by Debian's kubectl: its groups
pass `promtool check rules` (Debian's prometheus package: PromQL parses, label
templates expand), and `promtool test rules` with tests/deploy/alerts_test.yaml
fires each alert on the series that should fire it, with its labels and
annotations, and not before its `for`. TAP; 77 without promtool or kubectl."""
import os
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap, in_tempdir  # noqa: E402
import kustomize as kz  # noqa: E402

if not shutil.which("promtool") or not kz.debian_kubectl():
    print("1..0 # SKIP needs promtool (prometheus) and Debian's kubectl: scripts/install-deps.sh")
    sys.exit(77)
tap = Tap()
rule = kz.find(kz.render(kz.MONITORING), "PrometheusRule")
alerts = sorted(r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "alerts_test.yaml")) as f:
    unit = yaml.safe_load(f)
tested = sorted({t["alertname"] for case in unit["tests"] for t in case["alert_rule_test"]})
tap.ok(alerts == tested, "every alert of the PrometheusRule has a promtool unit test", (alerts, tested))
for want in ("GpusliceSliceAtMemoryCap", "GpusliceCpuFallback", "GpusliceCriticalLatency", "GpusliceAgentDown"):
    tap.ok(want in alerts, "the rules alert on %s" % want, alerts)


def run(d):
    with open(os.path.join(d, "rules.yaml"), "w") as f:
        yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "alerts_test.yaml"), d)
    check = subprocess.run(["promtool", "check", "rules", "rules.yaml"], cwd=d, capture_output=True, text=True)
    test = subprocess.run(["promtool", "test", "rules", "alerts_test.yaml"], cwd=d, capture_output=True, text=True)
    return check, test


check, test = in_tempdir("gs-rules-", run)
tap.ok(check.returncode == 0 and "SUCCESS" in check.stdout, "promtool check rules: the groups are valid",
       check.stdout + check.stderr)
tap.ok(test.returncode == 0 and "SUCCESS" in test.stdout,
       "promtool test rules: each alert fires on its series with its labels and annotations",
       test.stdout + test.stderr)
sys.exit(tap.done())
