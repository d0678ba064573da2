#!/usr/bin/python3
"""The gpuslice command line as a person meets it: `help VERB` is `VERB --help`;
the bash and zsh completion scripts (completions/) offer each verb's options,
asking the binary (`gpuslice __complete`), which reads the same --help; every
man page (man/) renders without a warning and names every option its verb's
--help names. TAP output."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build")))
GS = os.path.join(BUILD, "gpuslice")
tap = Tap()
ok = tap.ok
VERBS = ["run", "agent", "doctor", "monitor", "kubectl", "version"]
ENV = dict(os.environ, PATH=BUILD + ":" + os.environ.get("PATH", ""), LC_ALL="C.UTF-8")


def skip(why):
    tap.n += 1
    print("ok %d - # skip %s" % (tap.n, why), flush=True)


def out(*args):
    return subprocess.run([GS] + list(args), capture_output=True, text=True, timeout=30)


def complete(*words):
    return out("__complete", *words).stdout.split()


# ---- help
top = out("help")
listed = re.findall(r"^  (\w+)\s", top.stdout.split("commands:", 1)[-1], re.M)
ok(top.returncode == 0 and listed == VERBS + ["help"], "gpuslice help lists every verb", top.stdout)
for v in VERBS:
    a, b = out("help", v), out(v, "--help")
    ok(a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("usage: gpuslice " + v),
       "gpuslice help %s is gpuslice %s --help" % (v, v), (a.stdout[:200], b.stdout[:200], a.stderr))
p = out("help", "nope")
ok(p.returncode == 2 and "unknown command 'nope'" in p.stderr, "help of an unknown verb exits 2", p.stderr)
ok(out("--help").stdout == top.stdout and out("-h").stdout == top.stdout, "--help and -h are help")
p = out("version", "extra")
ok(p.returncode == 2 and "unexpected argument" in p.stderr, "version refuses an argument", p.stderr)

# ---- completion: the binary's answer
ok(complete("") == VERBS + ["help", "--help", "--version"], "the first word: the verbs", complete(""))
ok(complete("he") == ["help"] and complete("help", "do") == ["doctor"], "help completes verbs")
opts = {}
for v in ("run", "doctor", "monitor", "kubectl", "agent"):
    text = out(v, "--help").stdout
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9])", text))
    if v == "agent":  # settings are listed by name; each is also a flag
        named |= {"--" + n.replace("_", "-") for n in re.findall(r"^  ([a-z][a-z0-9_]*) ", text, re.M)}
    opts[v] = named
    got = set(complete(v, "--"))
    ok(named and got == named, "%s: completion offers exactly the options its --help names (%d)" % (v, len(named)),
       sorted(named ^ got))
ok({"--memory-unit", "--realtime-slots-per-gpu", "--besteffort-mps-threads", "--node-labels",
    "--config"} <= opts["agent"], "agent: settings padded to one space are found too", sorted(opts["agent"]))
ok(complete("kubectl", "")[:3] == ["request", "top", "doctor"] and
   "request" not in complete("kubectl", "top", ""), "kubectl: its commands first, then only options",
   complete("kubectl", "top", ""))
ok(complete("run", "--memory", "1Gi", "--", "") == [], "after -- (the command): nothing, the shell's files")
ok(complete("run", "--mem") == ["--memory"], "a prefix narrows the list")
plugin = os.path.join(BUILD, "tests", "kubectl_complete-gpuslice")
os.makedirs(os.path.dirname(plugin), exist_ok=True)
if os.path.lexists(plugin):
    os.unlink(plugin)
os.symlink(GS, plugin)
p = subprocess.run([plugin, "to"], capture_output=True, text=True)
q = subprocess.run([plugin, "doctor", "--", ""], capture_output=True, text=True)
ok(p.stdout == "top\n:4\n" and q.stdout == ":0\n",
   "kubectl_complete-gpuslice WORD... answers kubectl in cobra's format (:4 no files; :0 the shell's default)",
   p.stdout + q.stdout)
os.unlink(plugin)

# ---- the shell scripts
bash = subprocess.run(["bash", "-c", 'source "$0"; COMP_WORDS=(gpuslice doctor --sk); COMP_CWORD=2; _gpuslice;'
                       ' printf "%s\\n" "${COMPREPLY[@]}"; COMP_WORDS=(gpuslice kubectl ""); COMP_CWORD=2;'
                       ' _gpuslice; printf "%s\\n" "${COMPREPLY[@]}"; complete -p gpuslice kubectl-gpuslice',
                       os.path.join(SRC, "completions", "gpuslice.bash")], capture_output=True, text=True, env=ENV)
lines = bash.stdout.splitlines()
ok(bash.returncode == 0 and lines[0] == "--skip-cluster" and lines[1:4] == ["request", "top", "doctor"] and
   "complete -o default -F _gpuslice gpuslice" in bash.stdout and
   "complete -o default -F _gpuslice kubectl-gpuslice" in bash.stdout,
   "bash: the script completes options and commands, for gpuslice and kubectl-gpuslice",
   bash.stdout + bash.stderr)
if shutil.which("zsh"):
    z = subprocess.run(["zsh", "-f", "-c", '''
compadd() { [[ $1 == -a ]] && print -rl -- "${(@P)2}" }
_files() { print -r -- "(files)" }
eval "_gpuslice() { $(<$0) }"
words=(gpuslice monitor --js); CURRENT=3; _gpuslice
words=(gpuslice run --memory 1Gi -- ""); CURRENT=6; _gpuslice
words=(gpuslice ""); CURRENT=2; _gpuslice
''', os.path.join(SRC, "completions", "_gpuslice")], capture_output=True, text=True, env=ENV)
    zl = z.stdout.splitlines()
    ok(z.returncode == 0 and zl[:2] == ["--json", "(files)"] and zl[2:] == VERBS + ["help", "--help", "--version"],
       "zsh: the script completes options, leaves a command's words to _files, lists the verbs",
       z.stdout + z.stderr)
    with open(os.path.join(SRC, "completions", "_gpuslice")) as f:
        ok(f.readline().strip() == "#compdef gpuslice kubectl-gpuslice", "zsh: #compdef names both commands")
else:
    skip("zsh is not installed (scripts/install-deps.sh installs it)")

# ---- man pages
MAN = os.path.join(SRC, "man")
pages = sorted(f for f in os.listdir(MAN) if f.endswith(".1"))
ok(pages == sorted(["gpuslice.1"] + ["gpuslice-%s.1" % v for v in VERBS if v != "version"]),
   "a page for gpuslice and one for each verb", pages)
version = out("version").stdout.split()[1]
stale = [pg for pg in pages if '"gpuslice %s"' % version not in open(os.path.join(MAN, pg)).read().split("\n.nh")[0]]
ok(not stale, "every page's .TH names this version (gpuslice %s): bump them with the Makefile's VERSION" % version,
   stale)
groff = shutil.which("groff")
for page in pages:
    path = os.path.join(MAN, page)
    if not groff:
        skip("groff is not installed: %s not rendered" % page)
        continue
    r = subprocess.run(["groff", "-man", "-ww", "-Tutf8", "-rLL=100n", path], capture_output=True, env=ENV)
    text = re.sub(r".\x08", "", r.stdout.decode())  # grotty's overstrikes (bold, underline)
    ok(r.returncode == 0 and not r.stderr and "NAME" in text and "SYNOPSIS" in text,
       "%s renders without a warning (groff -ww)" % page, r.stderr.decode())
    verb = page[len("gpuslice-"):-2] if page != "gpuslice.1" else None
    if verb in opts:
        missing = sorted(o for o in opts[verb] if not re.search(re.escape(o) + r"(?![\w-])", text))
        ok(not missing, "%s names every option of gpuslice %s --help" % (page, verb), missing)
    elif verb is None:
        ok(all(re.search(r"\b%s\b" % v, text) for v in VERBS), "gpuslice.1 describes every verb")
if shutil.which("man"):
    r = subprocess.run(["man", "--warnings", "-l", os.path.join(MAN, "gpuslice-kubectl.1")],
                       capture_output=True, text=True, env=dict(ENV, MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
    ok(r.returncode == 0 and "kubectl gpuslice request" in r.stdout and not r.stderr,
       "man -l renders the plugin's page (man-db, --warnings)", r.stderr)
sys.exit(tap.done())
