//go:build cgo && !geoingest_nogdal && linux

package ogr

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reading child's sandbox, applied after libgdal is loaded and before
// the file is opened:
//
//   - seccomp: socket(2) and io_uring_setup(2) fail with EACCES in every
//     thread of the process, so nothing the file names (a /vsicurl/ or
//     /vsis3/ path, a schema URL) can open a connection, to any address,
//     whatever GDAL's options say;
//   - Landlock (Linux 5.13 and later): the reading thread, and every
//     thread it starts, may read only the job's folder and the system's
//     read-only data GDAL and PROJ need, write only where it is told
//     (a private folder for a GML schema GDAL derives), make no TCP
//     connection (ABI 4), and signal or reach no process or abstract
//     socket outside itself (ABI 6).
//
// Landlock restricts the thread that asks and the threads it starts, not
// the Go runtime's other threads, which run only geoingest's own Go code
// (the framing) and never GDAL's: every GDAL call is made from the
// locked main thread (child.go).

// Landlock's access rights (linux/landlock.h).
const (
	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13 // ABI 2
	llTruncate   = 1 << 14 // ABI 3
	llIoctlDev   = 1 << 15 // ABI 5

	llNetBindTCP    = 1 << 0 // ABI 4
	llNetConnectTCP = 1 << 1 // ABI 4

	llScopeAbstractUnix = 1 << 0 // ABI 6
	llScopeSignal       = 1 << 1 // ABI 6

	llRulePathBeneath = 1
	llCreateVersion   = 1 << 0
)

// systemReadPaths are read-only system data GDAL and PROJ may open while
// reading: their data folders, the C library's character-set converters
// and locales (iconv recodes MapInfo and CSV text), the random device
// SQLite seeds from. None holds an upload, a credential or a secret.
var systemReadPaths = []string{"/usr/share/gdal", "/usr/share/proj", "/usr/lib", "/lib", "/usr/share/zoneinfo", "/usr/share/locale", "/dev/urandom", "/dev/null"}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, llCreateVersion)
	if e != 0 {
		return 0
	}
	return int(v)
}

type llRulesetAttr struct {
	fs, net, scoped uint64
}

type llPathBeneath struct {
	allowed uint64
	fd      int32
}

// applySandbox restricts the calling thread and process as above, and
// says which protections it applied ("seccomp landlock=7"). It must run
// on the locked thread that then makes every GDAL call.
func applySandbox(read, write []string) string {
	var got []string
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return "none (no_new_privs: " + err.Error() + ")"
	}
	if err := denySockets(); err == nil {
		got = append(got, "seccomp")
	}
	if abi := landlockABI(); abi > 0 {
		if err := landlock(abi, read, write); err == nil {
			got = append(got, fmt.Sprintf("landlock=%d", abi))
		} else {
			got = append(got, "landlock failed: "+err.Error())
		}
	}
	if len(got) == 0 {
		return "none"
	}
	return strings.Join(got, " ")
}

func landlock(abi int, read, write []string) error {
	fsAll := uint64(llExecute | llWriteFile | llReadFile | llReadDir | llRemoveDir | llRemoveFile | llMakeChar | llMakeDir | llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym)
	if abi >= 2 {
		fsAll |= llRefer
	}
	if abi >= 3 {
		fsAll |= llTruncate
	}
	if abi >= 5 {
		fsAll |= llIoctlDev
	}
	attr := llRulesetAttr{fs: fsAll}
	size := unsafe.Sizeof(uint64(0))
	if abi >= 4 {
		attr.net = llNetBindTCP | llNetConnectTCP
		size = 2 * unsafe.Sizeof(uint64(0))
	}
	if abi >= 6 {
		attr.scoped = llScopeAbstractUnix | llScopeSignal
		size = unsafe.Sizeof(attr)
	}
	fd, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return e
	}
	defer unix.Close(int(fd))
	readAccess := uint64(llReadFile | llReadDir)
	writeAccess := readAccess | llWriteFile | llMakeReg | llRemoveFile | llMakeDir | llRemoveDir
	if abi >= 3 {
		writeAccess |= llTruncate
	}
	add := func(p string, access uint64) error {
		pfd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // a path the machine lacks grants nothing
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llReadFile | llWriteFile | llTruncate // the rights a file rule may hold
		}
		rule := llPathBeneath{allowed: access, fd: int32(pfd)}
		// struct landlock_path_beneath_attr is packed: 12 bytes.
		var raw [12]byte
		*(*uint64)(unsafe.Pointer(&raw[0])) = rule.allowed
		*(*int32)(unsafe.Pointer(&raw[8])) = rule.fd
		if _, _, e := unix.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, llRulePathBeneath, uintptr(unsafe.Pointer(&raw[0])), 0, 0, 0); e != 0 {
			return fmt.Errorf("rule for %s: %w", p, e)
		}
		return nil
	}
	for _, p := range append(append([]string(nil), systemReadPaths...), dataDirs()...) {
		if err := add(p, readAccess); err != nil {
			return err
		}
	}
	for _, p := range read {
		if err := add(p, readAccess); err != nil {
			return err
		}
	}
	for _, p := range write {
		if err := add(p, writeAccess); err != nil {
			return err
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return e
	}
	return nil
}

// dataDirs are the GDAL and PROJ data folders the environment names.
func dataDirs() []string {
	var out []string
	for _, k := range []string{"GDAL_DATA", "PROJ_DATA", "PROJ_LIB"} {
		for _, p := range strings.Split(os.Getenv(k), ":") {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// seccomp's constants (linux/seccomp.h, linux/filter.h, linux/audit.h).
const (
	seccompSetModeFilter = 1
	seccompFlagTSync     = 1
	seccompRetAllow      = 0x7fff0000
	seccompRetErrno      = 0x00050000
	bpfLdWAbs            = 0x20 // BPF_LD|BPF_W|BPF_ABS
	bpfJeqK              = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfRetK              = 0x06 // BPF_RET|BPF_K
)

// auditArch is this architecture's AUDIT_ARCH_ value, 0 if unknown.
func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return 0xc000003e
	case "arm64":
		return 0xc00000b7
	}
	return 0
}

// denySockets installs, in every thread (TSYNC), a seccomp filter under
// which socket(2) and io_uring_setup(2) fail with EACCES and any system
// call of another architecture (the 32-bit socketcall) with EPERM.
func denySockets() error {
	arch := auditArch()
	if arch == 0 {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	deny := uint32(seccompRetErrno | uint32(unix.EACCES))
	prog := []unix.SockFilter{
		{Code: bpfLdWAbs, K: 4}, // seccomp_data.arch
		{Code: bpfJeqK, Jt: 1, Jf: 0, K: arch},
		{Code: bpfRetK, K: seccompRetErrno | uint32(unix.EPERM)},
		{Code: bpfLdWAbs, K: 0}, // seccomp_data.nr
		{Code: bpfJeqK, Jt: 3, Jf: 0, K: uint32(unix.SYS_SOCKET)},
		{Code: bpfJeqK, Jt: 2, Jf: 0, K: uint32(unix.SYS_IO_URING_SETUP)},
		{Code: bpfJeqK, Jt: 1, Jf: 0, K: uint32(unix.SYS_PTRACE)},
		{Code: bpfRetK, K: seccompRetAllow},
		{Code: bpfRetK, K: deny},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, seccompSetModeFilter, seccompFlagTSync, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// setLimits sets the process's CPU (seconds) and data-segment limits, 0
// for none: the data segment may grow by dataBytes from what it is
// (libgdal and its libraries loaded). At the CPU limit the kernel kills the process
// (SIGKILL one second after the ignored SIGXCPU); past the data limit,
// allocations fail.
func setLimits(cpuSeconds, dataBytes int64) {
	if cpuSeconds > 0 {
		_ = unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: uint64(cpuSeconds), Max: uint64(cpuSeconds) + 1})
	}
	if dataBytes > 0 {
		n := uint64(dataBytes) + dataVM()
		_ = unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: n, Max: n})
	}
}

// dataVM is the process's data segment now (VmData: what RLIMIT_DATA
// counts), in bytes.
func dataVM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmData:"); ok {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			if dbg := os.Getenv("GEOINGEST_READER_DEBUG"); dbg != "" {
				os.WriteFile(dbg, b, 0o644)
			}
			return kb << 10
		}
	}
	return 0
}
