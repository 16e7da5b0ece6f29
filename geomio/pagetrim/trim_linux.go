//go:build linux && cgo

package pagetrim

/*
#define _GNU_SOURCE
#include <errno.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
	const uintptr_t *cand; // start, end pairs, ascending
	size_t ncand;
	uintptr_t page;
	size_t ranges, bytes;
	int err; // the first failed madvise's errno
} pt_ctx;

// pt_textrel reports whether the object has text relocations: the loader
// then writes into its read-only segments (made writable for a moment)
// while it relocates them, so they are left alone.
static int pt_textrel(struct dl_phdr_info *info) {
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_DYNAMIC) continue;
		const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		for (; d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_TEXTREL) return 1;
			if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)) return 1;
		}
	}
	return 0;
}

// pt_object gives back, of each read-only segment (a PT_LOAD without
// PF_W) of one loaded object, the parts that the candidate ranges cover.
static int pt_object(struct dl_phdr_info *info, size_t size, void *data) {
	pt_ctx *c = data;
	if (pt_textrel(info)) return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || ph->p_memsz == 0) continue;
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(c->page - 1);
		uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + c->page - 1) & ~(c->page - 1);
		for (size_t k = 0; k < c->ncand; k++) {
			uintptr_t s = c->cand[2*k], e = c->cand[2*k+1];
			if (e <= lo) continue;
			if (s >= hi) break;
			if (s < lo) s = lo;
			if (e > hi) e = hi;
			if (madvise((void *)s, e - s, MADV_DONTNEED) != 0) {
				if (c->err == 0) c->err = errno;
				continue;
			}
			c->ranges++;
			c->bytes += e - s;
		}
	}
	return 0;
}

// pt_trim runs pt_object on every loaded object. dl_iterate_phdr holds
// the loader's lock on the list of objects throughout, and dlclose
// unmaps an object only under that lock, so no object's segments can be
// unmapped (and their addresses reused) while it runs.
static int pt_trim(const uintptr_t *cand, size_t ncand, size_t *ranges, size_t *bytes) {
	pt_ctx c = {cand, ncand, (uintptr_t)sysconf(_SC_PAGESIZE), 0, 0, 0};
	dl_iterate_phdr(pt_object, &c);
	*ranges = c.ranges;
	*bytes = c.bytes;
	return c.err;
}
*/
import "C"

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Trim gives back this process's resident pages of the read-only
// segments of the executable and of every loaded shared library, where
// they hold nothing but the file's own bytes, and returns what it gave
// back. It may be called at any time, from any goroutine, concurrently
// with cgo calls. It costs a read of /proc/self/smaps and the madvise
// calls (a few milliseconds with GDAL's seventy libraries loaded) and,
// afterwards, a minor page fault for each window (up to 64 KB, mapped
// from the page cache) of code or data that is used again.
//
// Why it is safe. A resident page of a private file mapping is either
// the page cache's page of the file, mapped read-only, or, once written,
// the process's own copy (anonymous memory). Giving back a page of the
// first kind (madvise MADV_DONTNEED) loses nothing: its next use maps the
// page cache's page again, as after the kernel reclaims it under memory
// pressure. A page of the second kind would be lost (reverted to the
// file's bytes), so Trim gives back only
//   - ranges of the read-only segments (PT_LOAD without PF_W) of the
//     loaded objects (dl_iterate_phdr): the dynamic loader writes only
//     into writable segments (relocations; RELRO, made read-only once
//     relocated, lies in a writable segment), and never into a read-only
//     one unless the object has text relocations (DT_TEXTREL), and such
//     objects are skipped;
//   - and of those, only mappings that /proc/self/smaps shows as
//     file-backed, private, not writable, not locked, with no anonymous
//     page and nothing in swap: no page that anything wrote to (a
//     debugger's breakpoint, a segment relocated in place).
//
// Those mappings cannot be unmapped, and their addresses reused,
// meanwhile: the madvise calls run in dl_iterate_phdr's callback, under
// the loader's lock on its list of objects, which dlclose holds while it
// unmaps. Files that a library maps as data (a locale archive, a cache)
// are not segments of a loaded object and are left alone. One race
// remains, harmless to the process: a debugger or uprobe that patches a
// page between the read of smaps and the madvise loses that patch (the
// original instruction comes back).
func Trim() (Result, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return Result{Supported: true}, fmt.Errorf("pagetrim: %w", err)
	}
	defer f.Close()
	return TrimWith(f)
}

// TrimWith is Trim reading smaps, this process's /proc/self/smaps opened
// earlier (from its start): for a process that may no longer open it (a
// sandboxed one).
func TrimWith(smaps *os.File) (Result, error) {
	if _, err := smaps.Seek(0, io.SeekStart); err != nil {
		return Result{Supported: true}, fmt.Errorf("pagetrim: %w", err)
	}
	spans, err := candidates(smaps)
	if err != nil {
		return Result{Supported: true}, fmt.Errorf("pagetrim: reading smaps: %w", err)
	}
	if len(spans) == 0 {
		return Result{Supported: true}, nil
	}
	cand := make([]C.uintptr_t, 0, 2*len(spans))
	for _, s := range spans {
		cand = append(cand, C.uintptr_t(s.start), C.uintptr_t(s.end))
	}
	var ranges, n C.size_t
	errno := C.pt_trim(&cand[0], C.size_t(len(spans)), &ranges, &n)
	res := Result{Supported: true, Ranges: int(ranges), Bytes: int64(n)}
	if errno != 0 {
		return res, fmt.Errorf("pagetrim: madvise: %w", syscall.Errno(errno))
	}
	return res, nil
}
