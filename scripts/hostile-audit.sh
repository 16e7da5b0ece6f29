#!/usr/bin/env bash
# hostile-audit.sh: counts, with strace, every file that geoingest opens and
# every connection it tries while it reads each upload of the hostile
# corpus (internal/testsupport/hostile/corpus: URLs, virtual file systems, files
# outside the upload, endless and swelling GeoPackage views, bombs), as
# `geoingest inspect` reads it: fetched into a job folder of its own, then
# read, by the worker's Go readers or by a GDAL reading child
# (docs/operations.md, "Hostile uploads: the threat model").
#
#   scripts/hostile-audit.sh            # every case
#   scripts/hostile-audit.sh gpkg-view  # the cases whose name has gpkg-view
#
# Each open (open, openat, openat2, creat) and each socket, connect and
# bind of the worker and of its reading child ("reader") is classed by
# the file it names (the file opened, as strace -y resolves it):
#   job     the job's folder (geoingest-inspect-* under $TMPDIR);
#   upload  the worker only: the upload's own files where the fetch reads
#           them (the "bucket": the case's folder), the work folder
#           itself (creating and removing the job's);
#   system  libraries and the loader's cache, GDAL's and PROJ's data,
#           locales and time zones, /dev/null and /dev/urandom (what the
#           reading child's Landlock rules allow), the process's own
#           /proc/PID and the kernel's CPU, memory and cgroup facts the
#           Go runtime reads at start, the binary (the child's exec), and
#           GDAL's configuration file /etc/gdal/gdalrc, and PROJ's
#           look for its own proj.db and proj.ini along its search path
#           (the user's PROJ folder: missing);
#   outside anything else, listed by path: opened (the target is 0) or
#           refused (what the file tried: Landlock's EACCES, a missing
#           file).
# It prints a line per case and the totals, and exits 1 when a file
# outside was opened or a connection was tried. Needs strace (skipped,
# exit 0, without it) and GDAL's ogr2ogr (the corpus's MapInfo and
# GeoPackage cases are made with it). AUDIT_DIR (default a new folder in
# /tmp) keeps the traces (AUDIT_DIR/trace/CASE.txt). Slow cases stop at
# --read-timeout 5s; the whole corpus takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "hostile-audit: strace not found (apt-get install strace): skipped" >&2; exit 0; }
command -v ogr2ogr >/dev/null || { echo "hostile-audit: ogr2ogr not found (apt-get install gdal-bin)" >&2; exit 1; }

dir=${AUDIT_DIR:-$(mktemp -d /tmp/geoingest-audit-XXXXXX)}
mkdir -p "$dir/trace" "$dir/work" "$dir/home"
go build -o "$dir/geoingest" ./cmd/geoingest
mapfile -t uploads < <(go run ./internal/testsupport/hostile -corpus "$dir/corpus")

for u in "${uploads[@]}"; do
	case_name=${u%%/*}
	case_name=${case_name#sandbox-}
	if [ $# -gt 0 ]; then
		keep=0
		for want in "$@"; do [[ $case_name == *"$want"* ]] && keep=1; done
		[ "$keep" = 1 ] || continue
	fi
	# The worker's environment as in TestHostileCorpus: credentials that
	# would sign /vsis3/ requests to the address the files name.
	TMPDIR="$dir/work" GEOINGEST_HOME="$dir/home" AWS_ACCESS_KEY_ID=AKIAHOSTILEAUDIT AWS_SECRET_ACCESS_KEY=hostile-audit-key \
		strace -f -qq -Y -y -s 4096 -e signal=none \
		-e trace=open,openat,openat2,creat,socket,connect,bind,execve \
		-o "$dir/trace/$case_name.txt" \
		"$dir/geoingest" inspect --read-timeout 5s --read-cpu 3s "$dir/corpus/$u" >"$dir/trace/$case_name.out" 2>&1 || true
done

python3 - "$dir" <<'PY'
import os, re, sys
from collections import Counter, defaultdict

d = sys.argv[1]
corpus, work = os.path.join(d, "corpus"), os.path.join(d, "work")
binary = os.path.realpath(os.path.join(d, "geoingest"))
system = ["/usr/share/gdal", "/usr/share/proj", "/usr/lib", "/lib", "/usr/share/zoneinfo",
          "/usr/share/locale", "/dev/urandom", "/dev/null", "/etc/ld.so.cache", "/etc/localtime",
          "/etc/gdal/gdalrc", "/sys/devices/system/cpu", "/sys/devices/system/node",
          "/sys/kernel/mm/transparent_hugepage", "/sys/fs/cgroup", "/proc/sys/vm/overcommit_memory", binary]
for k in ("GDAL_DATA", "PROJ_DATA", "PROJ_LIB"):
    system += [p for p in os.environ.get(k, "").split(":") if p]

def beneath(p, root):
    return p == root or p.startswith(root.rstrip("/") + "/")

line_re = re.compile(r'^(\d+)<([^>]*)> (.*)$')
call_re = re.compile(r'^(\w+)\((.*)$')
res_re = re.compile(r'= (-?\d+)(?:<([^>]*)>)?(?: (\w+))?')

def classify(pid, role, path, casedir):
    if beneath(path, work) and "/geoingest-inspect-" in path:
        return "job"
    if any(beneath(path, s) for s in system):
        return "system"
    m = re.match(r'^/proc/(\d+)(/|$)', path)
    if m and m.group(1) == str(pid) or path.startswith("/proc/self/") or path.startswith("/proc/thread-self/"):
        return "system"
    if role == "worker" and (beneath(path, casedir) or path in (work, work + "/")):
        return "upload"
    return "outside"

total = Counter()
worst = []
print("%-30s %6s %6s %6s %6s %8s %8s %8s  %s" % ("case", "role", "job", "upload", "system", "outside", "refused", "connect", "outside paths (refused ones marked !)"))
for name in sorted(os.listdir(os.path.join(d, "trace"))):
    if not name.endswith(".txt"):
        continue
    case = name[:-4]
    casedir = os.path.join(corpus, "sandbox-" + case)
    pending = {}
    counts = defaultdict(Counter)
    paths = defaultdict(set)
    tgid_of = {}
    for raw in open(os.path.join(d, "trace", name), errors="replace"):
        m = line_re.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, comm, rest = int(m.group(1)), m.group(2), m.group(3)
        # The reading child is /proc/self/exe executed again: its comm is
        # "exe" (and its threads').
        role = "reader" if comm == "exe" else "worker"
        if rest.startswith("<... "):
            call = pending.pop(pid, None)
            if call is None:
                continue
            rest = call + " " + rest.split("resumed>", 1)[-1]
        elif rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")]
            continue
        cm = call_re.match(rest)
        if not cm:
            continue
        fn, args = cm.group(1), cm.group(2)
        rm = res_re.search(rest[rest.rfind(") = ") + 2:] if ") = " in rest else "")
        if not rm:
            continue
        ret, resolved, errno = int(rm.group(1)), rm.group(2), rm.group(3)
        if fn in ("socket", "connect", "bind"):
            counts[role][fn + (" refused" if ret < 0 else "")] += 1
            if fn == "connect":
                counts[role]["connect"] += 0
            continue
        if fn == "execve":
            continue
        # The path asked for, made absolute against the directory fd.
        am = re.match(r'(?:(AT_FDCWD|\d+)<([^>]*)>, )?"((?:[^"\\]|\\.)*)"', args)
        if not am:
            continue
        base, asked = am.group(2) or "/", am.group(3)
        path = resolved if ret >= 0 and resolved else os.path.normpath(os.path.join(base, asked))
        c = classify(pid, role, path, casedir)
        if c == "outside" and ret < 0 and errno == "ENOENT" and re.search(r'/proj/proj\.(db|ini)$', path):
            c = "system"  # PROJ looking for its own files along its search path
        if c == "outside" and ret < 0:
            c = "refused"
            paths[role].add("!" + path + " (" + (errno or "") + ")")
        elif c == "outside":
            paths[role].add(path)
        counts[role][c] += 1
    for role in ("worker", "reader"):
        k = counts[role]
        if not k:
            continue
        conn = k["connect"] + k["connect refused"]
        print("%-30s %6s %6d %6d %6d %8d %8d %8d  %s" % (case, role, k["job"], k["upload"], k["system"], k["outside"], k["refused"], conn, " ".join(sorted(paths[role]))[:400]))
        for f in ("job", "upload", "system", "outside", "refused", "socket", "socket refused", "connect", "connect refused", "bind", "bind refused"):
            total[role + " " + f] += k[f]
cases = len([n for n in os.listdir(os.path.join(d, "trace")) if n.endswith(".txt")])
print()
print("%d cases. worker: %d opens in job folders, %d of the uploads' own files, %d system; %d outside, %d refused; sockets %d (%d refused), connects %d (%d refused)" % (
    cases, total["worker job"], total["worker upload"], total["worker system"], total["worker outside"], total["worker refused"],
    total["worker socket"] + total["worker socket refused"], total["worker socket refused"], total["worker connect"] + total["worker connect refused"], total["worker connect refused"]))
print("%d cases. reader: %d opens in job folders, %d system; %d outside, %d refused; sockets %d (%d refused), connects %d (%d refused)" % (
    cases, total["reader job"], total["reader system"], total["reader outside"], total["reader refused"],
    total["reader socket"] + total["reader socket refused"], total["reader socket refused"], total["reader connect"] + total["reader connect refused"], total["reader connect refused"]))
bad = total["worker outside"] + total["reader outside"] + sum(total[r + " connect"] + total[r + " connect refused"] for r in ("worker", "reader"))
sys.exit(1 if bad else 0)
PY
